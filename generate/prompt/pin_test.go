package prompt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/internal/atomicfile"
)

func TestInputPinsTheExemplarFile(t *testing.T) {
	in, err := Input("", "fever", data.FS)
	if err != nil {
		t.Fatal(err)
	}
	if in.Path != "embedded:prompts/fever.json" || len(in.SHA256) != 64 || in.Bytes == 0 {
		t.Errorf("embedded: %+v", in)
	}
	path := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(path, []byte(`{"webthink_simple6": "Question: x"}`), 0o644)
	in, err = Input(path+"#webthink_simple6", "hotpotqa", data.FS)
	if err != nil {
		t.Fatal(err)
	}
	_, sum, _ := atomicfile.Digest(path)
	if in.SHA256 != sum || in.Path != path+"#webthink_simple6" {
		t.Errorf("file#key: %+v, want sha256 %s", in, sum)
	}
	if _, err := Input(filepath.Join(t.TempDir(), "none.json"), "hotpotqa", data.FS); err == nil {
		t.Error("a missing exemplar file: got nil error")
	}
}
