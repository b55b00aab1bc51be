package pipeline_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestCopiedLinesMatchEncoding: a record copied by its line (WriteLine, WriteRejected)
// is byte-for-byte what encoding it again (Write) gives, for lines json.Marshal wrote.
func TestCopiedLinesMatchEncoding(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.jsonl")
	w, err := pipeline.CreateJSONL(src)
	if err != nil {
		t.Fatal(err)
	}
	eps := []pipeline.Episode{episodetest.Full(), episodetest.Outcome("q1", 0, pipeline.StopFinished, true), {ID: "x"}}
	for _, ep := range eps {
		if err := w.Write(ep); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	rejects := []pipeline.Reject{{Rule: "correct", Code: "wrong_answer", Detail: `prediction "a<b>"`}, {Rule: "dedupe", Code: "duplicate"}}
	files := map[string]*pipeline.JSONLWriter{}
	for _, name := range []string{"kept-enc", "kept-copy", "rej-enc", "rej-copy"} {
		if files[name], err = pipeline.CreateJSONL(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for rec, err := range pipeline.ReadEpisodeLines(src, true) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		files["kept-enc"].Write(rec.Episode)
		files["kept-copy"].WriteLine(rec.Line)
		files["rej-enc"].Write(pipeline.Rejected{Episode: rec.Episode, Rejects: rejects})
		if err := files["rej-copy"].WriteRejected(rec.Line, rejects); err != nil {
			t.Fatal(err)
		}
	}
	if n != len(eps) {
		t.Fatalf("read %d records, wrote %d", n, len(eps))
	}
	for _, f := range files {
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, pair := range [][2]string{{"kept-enc", "kept-copy"}, {"rej-enc", "rej-copy"}} {
		a, _ := os.ReadFile(filepath.Join(dir, pair[0]))
		b, _ := os.ReadFile(filepath.Join(dir, pair[1]))
		if !bytes.Equal(a, b) {
			t.Errorf("%s and %s differ:\n%s\n%s", pair[0], pair[1], a, b)
		}
	}
	var rejected []string
	for r, err := range pipeline.ReadRejected(filepath.Join(dir, "rej-copy")) {
		if err != nil {
			t.Fatal(err)
		}
		rejected = append(rejected, r.ID+":"+r.Codes())
	}
	if len(rejected) != len(eps) || !strings.HasSuffix(rejected[0], "correct/wrong_answer,dedupe/duplicate") {
		t.Errorf("rejected records read back: %v", rejected)
	}
}

// TestReadEpisodeLinesUndecoded: the second pass (decode false) yields the same ids and
// lines in the same order as the first, torn last line and superseded records included.
func TestReadEpisodeLinesUndecoded(t *testing.T) {
	path := filepath.Join(t.TempDir(), pipeline.EpisodesFile)
	var b strings.Builder
	for i := range 600 {
		ep := episodetest.Outcome(fmt.Sprintf("q%03d", i%500), 0, pipeline.StopFinished, i%3 == 0)
		line, _ := jsonLine(ep)
		b.WriteString(line)
	}
	b.WriteString(`{"schema":1,"id":"zzz","question_id":"q9","st` + "\n") // complete, unparseable last line
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	type rec struct{ id, line string }
	read := func(decode bool) []rec {
		var out []rec
		for r, err := range pipeline.ReadEpisodeLines(path, decode) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec{r.Episode.ID, string(r.Line)})
		}
		return out
	}
	first, second := read(true), read(false)
	if len(first) != 500 || fmt.Sprint(first) != fmt.Sprint(second) {
		t.Fatalf("first pass %d records, second %d; differ: %v", len(first), len(second), fmt.Sprint(first) != fmt.Sprint(second))
	}
	var eps []pipeline.Episode
	for ep, err := range pipeline.ReadEpisodes(path) {
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	for i, ep := range eps {
		var want pipeline.Episode
		if err := pipeline.DecodeEpisode([]byte(first[i].line), &want); err != nil || want.ID != ep.ID || ep.ID != first[i].id {
			t.Fatalf("record %d: %s, line holds %s (%v)", i, ep.ID, want.ID, err)
		}
	}
}

// TestReadKeptChunks: kept.jsonl read in chunks on every core keeps the file's order,
// skips a torn last line and names the line of a malformed one.
func TestReadKeptChunks(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 1000 {
		line, _ := jsonLine(episodetest.Outcome(fmt.Sprintf("q%04d", i), 0, pipeline.StopFinished, true))
		b.WriteString(line)
		if i == 300 {
			b.WriteString("\n  \n")
		}
	}
	good := b.String()
	for _, tt := range []struct {
		name, data string
		n          int
		err        string
	}{
		{"whole", good, 1000, ""},
		{"torn tail", good + `{"schema":1,"id":"x"`, 1000, ""},
		{"unparseable last", good + "{\"schema\":1,\"id\":\n", 1000, ""},
		{"malformed inside", good + "{bad\n" + good, 1000, "line 1003"},
		{"malformed before torn", good + "{bad\n{\"id\"", 1000, "line 1003"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			os.WriteFile(path, []byte(tt.data), 0o644)
			n := 0
			var gotErr error
			for ep, err := range pipeline.ReadKept(path) {
				if err != nil {
					gotErr = err
					break
				}
				if want := fmt.Sprintf("q%04d", n); ep.QuestionID != want {
					t.Fatalf("record %d is %s, want %s", n, ep.QuestionID, want)
				}
				n++
			}
			if n != tt.n || (tt.err == "") != (gotErr == nil) || (gotErr != nil && !strings.Contains(gotErr.Error(), tt.err)) {
				t.Errorf("read %d records, error %v; want %d, %q", n, gotErr, tt.n, tt.err)
			}
		})
	}
}

func jsonLine(ep pipeline.Episode) (string, error) {
	b, err := json.Marshal(ep)
	return string(b) + "\n", err
}

// TestLogIndexTwoPasses: one scan serves two passes, the decoded and the undecoded one,
// which yield what ReadEpisodeLines yields, and LinesOf a subset of them; a log rewritten
// after the scan is an error naming the line, not another record.
func TestLogIndexTwoPasses(t *testing.T) {
	path := filepath.Join(t.TempDir(), pipeline.EpisodesFile)
	var b strings.Builder
	for i := range 2400 { // 2,000 records: eight chunks, so that their buffers are reused
		line, _ := jsonLine(episodetest.Outcome(fmt.Sprintf("q%04d", (i*7)%2000), 0, pipeline.StopFinished, i%3 == 0))
		b.WriteString(line)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := pipeline.OpenLogIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	read := func(seq func(func(pipeline.EpisodeLine, error) bool)) (out []string, err error) {
		for r, err := range seq {
			if err != nil {
				return out, err
			}
			out = append(out, r.Episode.ID+" "+r.Episode.QuestionID+" "+string(r.Line))
		}
		return out, nil
	}
	want, err := read(pipeline.ReadEpisodeLines(path, true))
	if err != nil || x.Len() != 2000 || len(want) != 2000 {
		t.Fatalf("%d records (%v), index of %d", len(want), err, x.Len())
	}
	last := map[string]string{} // of each id its last line, read here by encoding/json
	for line := range strings.Lines(b.String()) {
		var ep pipeline.Episode
		if err := json.Unmarshal([]byte(line), &ep); err != nil {
			t.Fatal(err)
		}
		last[ep.ID] = ep.ID + " " + ep.QuestionID + " " + strings.TrimSuffix(line, "\n")
	}
	ids := slices.Sorted(maps.Keys(last))
	for i, id := range ids {
		if want[i] != last[id] {
			t.Fatalf("record %d: %.60s, want %.60s (each id's last line, by id)", i, want[i], last[id])
		}
	}
	first, err1 := read(x.Lines(pipeline.DecodeEpisode))
	second, err2 := read(x.Lines(nil))
	if err1 != nil || err2 != nil || fmt.Sprint(first) != fmt.Sprint(want) {
		t.Fatalf("decoded pass differs from ReadEpisodeLines (%v, %v)", err1, err2)
	}
	for i := range second {
		if id, _, _ := strings.Cut(want[i], " "); !strings.HasPrefix(second[i], id+"  {") {
			t.Fatalf("undecoded record %d: %.60s, want the id and line of %.60s", i, second[i], want[i])
		}
	}
	// LinesOf: of every third id its record, as Lines yields it; an id not in the index,
	// or out of order, is an error.
	var some, wantSome []string
	for i := 0; i < len(ids); i += 3 {
		some = append(some, ids[i])
		wantSome = append(wantSome, want[i])
	}
	if got, err := read(x.LinesOf(some, pipeline.DecodeEpisode)); err != nil || fmt.Sprint(got) != fmt.Sprint(wantSome) {
		t.Fatalf("LinesOf every third id: %d records (%v), want %d", len(got), err, len(wantSome))
	}
	for _, bad := range [][]string{{ids[0], "none"}, {ids[5], ids[2]}} {
		if _, err := read(x.LinesOf(bad, nil)); err == nil || !strings.Contains(err.Error(), "no record") {
			t.Errorf("LinesOf %q: %v, want an error", bad, err)
		}
	}
	other := strings.ReplaceAll(b.String(), `"question_id":"q`, `"question_id":"r`)
	other = strings.ReplaceAll(other, `"id":"`, `"id":"x`)[:len(b.String())]
	if err := os.WriteFile(path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := read(x.Lines(nil)); err == nil || !strings.Contains(err.Error(), "changed") || !strings.Contains(err.Error(), " line ") {
		t.Errorf("a log rewritten after the scan: %v, want an error naming the line", err)
	}
	if _, err := read(x.LinesOf(some[len(some)/2:], nil)); err == nil || !strings.Contains(err.Error(), "changed") || !strings.Contains(err.Error(), " line ") {
		t.Errorf("LinesOf on a log rewritten after the scan: %v, want an error naming the line", err)
	}
}
