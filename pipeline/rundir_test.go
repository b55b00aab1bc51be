package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reactgen/reactgen/internal/safefile"
)

func TestOwned(t *testing.T) {
	for name, want := range map[string]bool{
		"manifest.json": true, "episodes.jsonl": true, "export": true, "llm-cache": true, "lock": true,
		".manifest.json.tmp-123": true, ".kept.jsonl.tmp-9": true, ".index.building-4": true, ".index.old-7": true,
		".index.lock": true, "previous-20260101T000000": true, "eval.json": true,
		"notes.txt": false, ".bashrc": false, "manifest.json.bak": false, ".notes.tmp-1": false, "Documents": false,
	} {
		if got := Owned(name); got != want {
			t.Errorf("Owned(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestExecuteRefusesWhatIsNotARunDirectory(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		want  any
	}{
		{"the user's files", func(dir string) { os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644) }, new(*ForeignError)},
		{"another program's manifest.json", func(dir string) {
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"name": "app"}`), 0o644)
		}, new(*InputError)},
		{"a linked lock", func(dir string) { os.Symlink(filepath.Join(tmp, "victim"), filepath.Join(dir, LockFile)) }, new(*safefile.LinkError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			os.MkdirAll(dir, 0o755)
			tc.setup(dir)
			before, _ := os.ReadDir(dir)
			_, err := Execute(t.Context(), Spec{Dir: dir, Command: "test", Results: map[string]string{"k": "v"}})
			if err == nil || !errors.As(err, tc.want) {
				t.Fatalf("got %v, want a %T", err, tc.want)
			}
			if after, _ := os.ReadDir(dir); len(after) != len(before) {
				t.Errorf("entries before %d, after %d: the refusal wrote", len(before), len(after))
			}
		})
	}
	// checkPath alone: a regression of Execute must not write a run into "/".
	if err := checkPath("/"); err == nil {
		t.Error("a run in / was accepted")
	}
}
