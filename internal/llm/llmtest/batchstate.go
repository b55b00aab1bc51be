package llmtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
)

// ForgetBatchID rewrites the batch state that a client in batch mode keeps in dir
// (llm.BatchStateFile) as if its process had died after uploading each wave's input and
// before it learnt the batch's id: the case a resume must create the batch for.
func ForgetBatchID(t testing.TB, dir string) {
	t.Helper()
	path := filepath.Join(dir, llm.BatchStateFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string][]map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	for _, w := range st["waves"] {
		delete(w, "batch_id")
		w["status"] = "uploaded"
	}
	b, _ = json.Marshal(st)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
