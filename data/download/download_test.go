package download

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/shareddata"
)

// fileServer serves files by URL path the way a publisher's web server does (ranges
// through http.ServeContent), and can misbehave: cut the first breakN answers after
// half their bytes, ignore ranges, or serve other bytes than the table's.
type fileServer struct {
	*httptest.Server
	files       map[string][]byte
	mu          sync.Mutex
	breakN      int
	ignoreRange bool
	ranges      []string // the Range header of every request, "" for none
}

func newFileServer(t *testing.T, files map[string][]byte) *fileServer {
	t.Helper()
	s := &fileServer{files: files}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *fileServer) serve(w http.ResponseWriter, r *http.Request) {
	body, ok := s.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	cut := s.breakN > 0
	if cut {
		s.breakN--
	}
	s.mu.Unlock()
	if s.ignoreRange {
		r.Header.Del("Range")
	}
	if cut {
		// Promise the whole file, send half of it, and drop the connection.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

func (s *fileServer) seenRanges() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func entry(set, path, url string, body []byte, unpack string) File {
	sum := sha256.Sum256(body)
	return File{Set: set, Path: path, URL: url, Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:]), Unpack: unpack}
}

// questions is a made-up question file; big enough that half of it is a real cut.
var questions = []byte(`[` + strings.Repeat(`{"question": "Which river runs through Vellmoor?", "answer": "the Aske", "type": "bridge"},`, 200) +
	`{"question": "Is Tarn Hollow older than Brindle Cross?", "answer": "yes", "type": "comparison"}]`)

func pagesZip(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"wiki-pages/", "wiki-pages/wiki-001.jsonl", "wiki-pages/wiki-002.jsonl", "../escape.txt"} {
		body, ok := entries[name]
		if !ok {
			continue
		}
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// paperLike is a table shaped like Paper (the same sets, paths and archive kinds) over
// made-up files served by srv.
func paperLike(t *testing.T) (map[string][]byte, []File) {
	t.Helper()
	tarball, err := os.ReadFile(filepath.Join("testdata", "abstracts.tar.bz2"))
	if err != nil {
		t.Fatal(err)
	}
	pages := pagesZip(t, map[string]string{
		"wiki-pages/":               "",
		"wiki-pages/wiki-001.jsonl": `{"id": "Vellmoor", "text": "Vellmoor is a market town . ", "lines": "0\tVellmoor is a market town ."}` + "\n",
		"wiki-pages/wiki-002.jsonl": `{"id": "Aske", "text": "The Aske is a river . ", "lines": "0\tThe Aske is a river ."}` + "\n",
	})
	served := map[string][]byte{
		"/datasets/hotpot/hotpot_train_v1.1.json":                                           questions,
		"/projects/hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2": tarball,
		"/download/fever/wiki-pages.zip":                                                    pages,
	}
	files := []File{
		entry("hotpotqa", "hotpotqa/hotpot_train_v1.1.json", "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_train_v1.1.json", questions, ""),
		entry("hotpotqa", "hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2",
			"https://nlp.stanford.edu/projects/hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2", tarball, UnpackTarBz2),
		entry("fever", "fever/wiki-pages.zip", "https://fever.ai/download/fever/wiki-pages.zip", pages, UnpackZip),
	}
	return served, files
}

func TestFetchVerifiesUnpacksAndSkipsWhatIsDone(t *testing.T) {
	served, files := paperLike(t)
	srv := newFileServer(t, served)
	dir := t.TempDir()
	var log bytes.Buffer
	res, err := Fetch(t.Context(), files, Options{Dir: dir, Mirror: srv.URL, Progress: &log})
	if err != nil {
		t.Fatalf("Fetch: %v\n%s", err, log.String())
	}
	if len(res) != 3 || res[0].Skipped || res[0].Fetched != int64(len(questions)) {
		t.Errorf("results = %+v", res)
	}
	got, err := os.ReadFile(filepath.Join(dir, "hotpotqa", "hotpot_train_v1.1.json"))
	if err != nil || !bytes.Equal(got, questions) {
		t.Errorf("question file: %v (%d bytes)", err, len(got))
	}
	for _, p := range []string{
		"hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts/AA/wiki_00.bz2",
		"hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts/AB/wiki_00.bz2",
		"fever/wiki-pages/wiki-001.jsonl", "fever/wiki-pages/wiki-002.jsonl",
	} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("unpacked %s: %v", p, err)
		}
	}
	for _, p := range []string{"fever/wiki-pages.zip", "hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2",
		"fever/.unpack-wiki-pages.zip", "hotpotqa/hotpot_train_v1.1.json.part"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s is left behind (%v)", p, err)
		}
	}
	want, _ := os.ReadFile(filepath.Join("..", "..", "index", "wikidump", "testdata", "hotpotwiki", "AA", "wiki_00.bz2"))
	if got, _ := os.ReadFile(filepath.Join(dir, "hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts/AA/wiki_00.bz2")); !bytes.Equal(got, want) {
		t.Errorf("the unpacked dump file differs from the one packed")
	}

	before := len(srv.seenRanges())
	res, err = Fetch(t.Context(), files, Options{Dir: dir, Mirror: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.Skipped {
			t.Errorf("second run fetched %s again", r.File.Path)
		}
	}
	if n := len(srv.seenRanges()) - before; n != 0 {
		t.Errorf("second run sent %d requests, want 0", n)
	}
}

func TestBrokenDownloadResumesOnTheNextRun(t *testing.T) {
	served, files := paperLike(t)
	srv := newFileServer(t, served)
	srv.breakN = 1
	dir := t.TempDir()
	_, err := Fetch(t.Context(), files[:1], Options{Dir: dir, Mirror: srv.URL, Attempts: 1})
	var broken *brokenError
	if !errors.As(err, &broken) {
		t.Fatalf("Fetch with a cut connection and one attempt = %v, want a broken download", err)
	}
	part := filepath.Join(dir, "hotpotqa", "hotpot_train_v1.1.json.part")
	st, err := os.Stat(part)
	if err != nil || st.Size() != int64(len(questions)/2) {
		t.Fatalf("the partial file: %v, %v bytes, want %d", err, st, len(questions)/2)
	}
	if _, err := os.Stat(filepath.Join(dir, "hotpotqa", "hotpot_train_v1.1.json")); !os.IsNotExist(err) {
		t.Fatalf("the broken file took its name: %v", err)
	}
	if _, err := Fetch(t.Context(), files[:1], Options{Dir: dir, Mirror: srv.URL}); err != nil {
		t.Fatal(err)
	}
	ranges := srv.seenRanges()
	if want := "bytes=" + strconv.Itoa(len(questions)/2) + "-"; len(ranges) != 2 || ranges[1] != want {
		t.Errorf("requests' ranges = %q, want the second to ask %q", ranges, want)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "hotpotqa", "hotpot_train_v1.1.json")); !bytes.Equal(got, questions) {
		t.Errorf("the resumed file differs from the served one")
	}
}

func TestBrokenDownloadResumesInTheSameRun(t *testing.T) {
	served, files := paperLike(t)
	srv := newFileServer(t, served)
	srv.breakN = 2
	dir := t.TempDir()
	var log bytes.Buffer
	if _, err := Fetch(t.Context(), files[:1], Options{Dir: dir, Mirror: srv.URL, Progress: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "resuming (attempt 2 of 3)") {
		t.Errorf("progress does not say it resumed:\n%s", log.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "hotpotqa", "hotpot_train_v1.1.json")); !bytes.Equal(got, questions) {
		t.Errorf("the file differs from the served one")
	}
}

func TestServerWithoutRangesRestartsTheFile(t *testing.T) {
	served, files := paperLike(t)
	srv := newFileServer(t, served)
	dir := t.TempDir()
	part := filepath.Join(dir, "hotpotqa", "hotpot_train_v1.1.json.part")
	os.MkdirAll(filepath.Dir(part), 0o755)
	os.WriteFile(part, []byte("garbage from another file"), 0o644)
	srv.ignoreRange = true
	if _, err := Fetch(t.Context(), files[:1], Options{Dir: dir, Mirror: srv.URL}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "hotpotqa", "hotpot_train_v1.1.json")); !bytes.Equal(got, questions) {
		t.Errorf("the file differs from the served one")
	}
}

func TestChecksumMismatchFailsAndLeavesNothing(t *testing.T) {
	served, files := paperLike(t)
	tampered := bytes.Clone(questions)
	tampered[10] ^= 1
	served["/datasets/hotpot/hotpot_train_v1.1.json"] = tampered
	srv := newFileServer(t, served)
	dir := t.TempDir()
	_, err := Fetch(t.Context(), files, Options{Dir: dir, Mirror: srv.URL})
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.What != "SHA-256" || !mm.RemovedPartial {
		t.Fatalf("Fetch of a tampered file = %v, want a SHA-256 mismatch with the bytes removed", err)
	}
	if !strings.Contains(err.Error(), "hotpotqa/hotpot_train_v1.1.json") || !strings.Contains(err.Error(), files[0].SHA256) {
		t.Errorf("the error names neither the file nor the sum: %v", err)
	}
	for _, p := range []string{"hotpotqa/hotpot_train_v1.1.json", "hotpotqa/hotpot_train_v1.1.json.part"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s is left in place after a mismatch (%v)", p, err)
		}
	}

	served["/datasets/hotpot/hotpot_train_v1.1.json"] = questions[:len(questions)-1]
	_, err = Fetch(t.Context(), files[:1], Options{Dir: dir, Mirror: srv.URL, Attempts: 1})
	var short *brokenError
	if !errors.As(err, &short) {
		t.Errorf("a file one byte short = %v, want a broken download", err)
	}
}

func TestUnsafeArchiveEntriesAreRefused(t *testing.T) {
	evil := pagesZip(t, map[string]string{"wiki-pages/wiki-001.jsonl": "{}\n", "../escape.txt": "owned"})
	srv := newFileServer(t, map[string][]byte{"/download/fever/wiki-pages.zip": evil})
	dir := t.TempDir()
	files := []File{entry("fever", "fever/wiki-pages.zip", "https://fever.ai/download/fever/wiki-pages.zip", evil, UnpackZip)}
	_, err := Fetch(t.Context(), files, Options{Dir: dir, Mirror: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "outside the folder") {
		t.Fatalf("Fetch of a zip with ../escape.txt = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.txt")); !os.IsNotExist(err) {
		t.Errorf("the entry escaped: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fever", "wiki-pages")); !os.IsNotExist(err) {
		t.Errorf("a refused archive left part of its tree: %v", err)
	}
}

func TestTableEntriesStayInside(t *testing.T) {
	for _, p := range []string{"../x.json", "/etc/x.json", ""} {
		f := File{Path: p, URL: "http://x/y", Size: 1, SHA256: strings.Repeat("0", 64)}
		if _, err := Fetch(t.Context(), []File{f}, Options{Dir: t.TempDir()}); err == nil {
			t.Errorf("a table entry with path %q was taken", p)
		}
	}
}

func TestOneRunAtATime(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".reactgen-data"), 0o755)
	unlock, err := lock(filepath.Join(dir, ".reactgen-data", "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_, err = Fetch(t.Context(), nil, Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "another reactgen data") {
		t.Errorf("a second run = %v, want a refusal", err)
	}
}

func TestCancelStopsADownload(t *testing.T) {
	// A server that sends a little and then stalls: ^C must end the wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stall := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-stall
	})}
	go srv.Serve(ln)
	defer func() { close(stall); srv.Close() }()
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	f := File{Set: "x", Path: "x.json", URL: "http://" + ln.Addr().String() + "/x.json", Size: 1000, SHA256: strings.Repeat("0", 64)}
	_, err = Fetch(ctx, []File{f}, Options{Dir: t.TempDir()})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch after cancel = %v, want context.Canceled", err)
	}
}

func TestMirrorTakesThePublishersPath(t *testing.T) {
	for _, f := range Paper {
		got, err := URLFor(f, "http://mirror.example/base/")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, "http://mirror.example/base/") || !strings.HasSuffix(f.URL, strings.TrimPrefix(got, "http://mirror.example/base")) {
			t.Errorf("URLFor(%s) = %s", f.URL, got)
		}
	}
	if _, err := URLFor(Paper[0], "ftp://x"); err == nil {
		t.Error("an ftp mirror was taken")
	}
}

func TestPaperTableIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Paper {
		if err := checkEntry(f); err != nil {
			t.Error(err)
		}
		if seen[f.Path] {
			t.Errorf("%s twice", f.Path)
		}
		seen[f.Path] = true
		if f.Source == "" || !strings.HasPrefix(f.URL, "http") {
			t.Errorf("%s: no source or URL", f.Path)
		}
		if _, err := Select(Paper, []string{f.Set}); err != nil {
			t.Error(err)
		}
	}
	if _, err := Select(Paper, []string{"wikipedia"}); err == nil {
		t.Error("an unknown set was taken")
	}
}

// TestPaperSumsMatchTheSharedCopies checks the table's sizes and sums against the copies
// of the same publishers' files in ../shared/data, where they are present.
func TestPaperSumsMatchTheSharedCopies(t *testing.T) {
	copies := map[string]string{
		"hotpotqa/hotpot_dev_v1_simplified.json": "hotpotqa/hotpot_dev_v1_simplified.json",
		"fever/paper_dev.jsonl":                  "fever/paper_dev.jsonl",
		"react-prompts/prompts_naive.json":       "react-prompts/prompts_naive.json",
		"react-prompts/fever.json":               "react-prompts/fever.json",
		"react-prompts/alfworld_3prompts.json":   "react-prompts/alfworld_3prompts.json",
	}
	checked := 0
	for _, f := range Paper {
		rel, ok := copies[f.Path]
		if !ok {
			continue
		}
		p, ok := shareddata.Lookup(rel)
		if !ok {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("%s: the shared copy has %d bytes and sum %x; the table says %d and %s", f.Path, len(b), sum, f.Size, f.SHA256)
		}
		checked++
	}
	if checked == 0 {
		t.Skip("no shared copy of the paper's files is present")
	}
}
