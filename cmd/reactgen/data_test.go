package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reactgen/reactgen/data/download"
	"github.com/reactgen/reactgen/index"
)

// TestDataCommand runs `reactgen data` against a local mirror of made-up files laid out
// as the publishers' are: it downloads, verifies, unpacks and indexes them, prints the
// run lines, a second run fetches nothing, the indexes answer Search, and a file whose
// sum differs fails with exit 1 and leaves nothing under its name.
func TestDataCommand(t *testing.T) {
	tarball, err := os.ReadFile("../../data/download/testdata/abstracts.tar.bz2")
	if err != nil {
		t.Fatal(err)
	}
	train := []byte(`[{"_id": "q1", "question": "Which river does Marlow Ferry cross?", "answer": "River Tamsin", "type": "bridge", "level": "easy", "supporting_facts": [["Marlow Ferry", 0]], "context": []}]`)
	served := map[string][]byte{
		"/datasets/hotpot/hotpot_train_v1.1.json":                                           train,
		"/projects/hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2": tarball,
	}
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		body, ok := served[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	}))
	defer srv.Close()
	var table []download.File
	for _, f := range download.Paper {
		if f.Set != "hotpotqa" {
			continue
		}
		for p, body := range served {
			if strings.HasSuffix(f.URL, p) {
				sum := sha256.Sum256(body)
				f.Size, f.SHA256 = int64(len(body)), hex.EncodeToString(sum[:])
				table = append(table, f)
			}
		}
	}
	tmp := t.TempDir()
	manifest := filepath.Join(tmp, "files.json")
	b, _ := json.Marshal(table)
	os.WriteFile(manifest, b, 0o644)
	out := filepath.Join(tmp, "data")

	res := invoke(t, "", nil, "data", "--out", out, "--mirror", srv.URL, "--manifest", manifest)
	if res.code != 0 {
		t.Fatalf("data: exit %d\n%s", res.code, res.stderr)
	}
	ix := filepath.Join(out, "hotpotqa", "index")
	if !index.Exists(ix) {
		t.Fatalf("no index at %s:\n%s", ix, res.stderr)
	}
	for _, want := range []string{"reactgen run -c configs/hotpotqa-react.yaml", "--set task.path=" + filepath.Join(out, "hotpotqa", "hotpot_train_v1.1.json"),
		"--set corpus.index=" + ix, "#webthink_simple6'"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.stdout)
		}
	}
	if strings.Contains(res.stdout, "fever") {
		t.Errorf("stdout names FEVER, which was not fetched:\n%s", res.stdout)
	}

	before := requests.Load()
	res = invoke(t, "", nil, "data", "--out", out, "--mirror", srv.URL, "--manifest", manifest)
	if res.code != 0 || requests.Load() != before || !strings.Contains(res.stderr, "up to date") {
		t.Errorf("second run: exit %d, %d requests, stderr:\n%s", res.code, requests.Load()-before, res.stderr)
	}

	res = invoke(t, "Search[Marlow Ferry]\n", nil, "env", "--index", ix)
	if res.code != 0 || !strings.Contains(res.stdout, "cable ferry on the River Tamsin") {
		t.Errorf("env over the downloaded index: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	served["/datasets/hotpot/hotpot_train_v1.1.json"] = bytes.Replace(train, []byte("Tamsin"), []byte("Tamsyn"), 1)
	out2 := filepath.Join(tmp, "data2")
	res = invoke(t, "", nil, "data", "--out", out2, "--mirror", srv.URL, "--manifest", manifest, "--no-index")
	if res.code != 1 || !strings.Contains(res.stderr, "SHA-256") || !strings.Contains(res.stderr, "hotpot_train_v1.1.json") {
		t.Errorf("a tampered file: exit %d, stderr %q; want exit 1 naming the file and the sum", res.code, res.stderr)
	}
	for _, p := range []string{"hotpot_train_v1.1.json", "hotpot_train_v1.1.json.part"} {
		if _, err := os.Stat(filepath.Join(out2, "hotpotqa", p)); !os.IsNotExist(err) {
			t.Errorf("%s left after a mismatch: %v", p, err)
		}
	}

	if res := invoke(t, "", nil, "data", "--out", out2, "--only", "wikipedia"); res.code != 2 || !strings.Contains(res.stderr, "--only") {
		t.Errorf("--only wikipedia: exit %d, %q; want exit 2 naming the flag", res.code, res.stderr)
	}
	if res := invoke(t, "", nil, "data", "--out", out2, "--mirror", "ftp://x"); res.code != 2 || !strings.Contains(res.stderr, "--mirror") {
		t.Errorf("--mirror ftp://x: exit %d, %q; want exit 2 naming the flag", res.code, res.stderr)
	}
}
