package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/reactgen/reactgen/internal/atomicfile"
)

// killed is what CommitHook panics with to stop a commit where a kill would: no deferred
// cleanup of the commit's runs (it has none), the files on disk as a kill leaves them.
type killed struct{}

// commitStage writes kept.jsonl and rejected.jsonl with the given contents through one
// Commit (the test kills it by a hook on the commit's steps).
type commitStage struct {
	kept, rejected string
}

func (commitStage) Name() string { return StageFilter }

func (s commitStage) Run(_ context.Context, r *Run) (Counts, error) {
	var moves []Move
	var outs []Output
	for _, f := range []struct{ name, data string }{{KeptFile, s.kept}, {RejectedFile, s.rejected}} {
		a, err := atomicfile.Create(r.Dir.File(f.name))
		if err != nil {
			return nil, err
		}
		a.Write([]byte(f.data))
		tmp, err := a.Ready()
		if err != nil {
			return nil, err
		}
		o, err := DescribeOutput(r.Dir.Path, tmp, StageFilter, "jsonl", "", 1)
		if err != nil {
			return nil, err
		}
		o.Path = f.name
		outs = append(outs, o)
		moves = append(moves, Move{From: filepath.Base(tmp), To: f.name})
	}
	return nil, r.Commit(StageFilter, moves, nil, outs, "")
}

// TestCommitIsOneUnitWhereverItIsKilled kills a commit of kept.jsonl and rejected.jsonl
// after each of its steps: the next command that opens the run finds the commit's
// journal and completes it, so that the two files are always one result, the one the
// manifest records, and no temporary file is left.
func TestCommitIsOneUnitWhereverItIsKilled(t *testing.T) {
	defer func() { CommitHook = nil }()
	for killAt := 0; killAt <= 2; killAt++ {
		t.Run(fmt.Sprint("killed after step ", killAt), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			spec := testSpec(dir, map[string]string{"k": "1"})
			CommitHook = nil
			if _, err := Execute(t.Context(), spec, commitStage{kept: "old kept\n", rejected: "old rejected\n"}); err != nil {
				t.Fatal(err)
			}
			CommitHook = func(stage string, step int) {
				if step == killAt {
					panic(killed{})
				}
			}
			func() {
				defer func() {
					if _, ok := recover().(killed); !ok {
						t.Fatal("the commit was not killed")
					}
				}()
				Execute(t.Context(), spec, commitStage{kept: "new kept\n", rejected: "new rejected\n"})
			}()
			CommitHook = nil
			if stage, ok := PendingCommit(dir); !ok || stage != StageFilter {
				t.Fatalf("after the kill: pending commit %q %v, want the filter's", stage, ok)
			}
			// The lock of the killed process is stale: the next command takes it over.
			os.Remove(filepath.Join(dir, LockFile))
			r, err := Execute(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{KeptFile: "new kept\n", RejectedFile: "new rejected\n"} {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || string(b) != want {
					t.Errorf("%s: %q (%v), want %q", name, b, err, want)
				}
				i := slices.IndexFunc(r.Manifest.Outputs, func(o Output) bool { return o.Path == name })
				if i < 0 || r.Manifest.Outputs[i].Bytes != int64(len(want)) {
					t.Errorf("manifest outputs %+v: want %s of %d bytes", r.Manifest.Outputs, name, len(want))
				}
			}
			if _, ok := PendingCommit(dir); ok {
				t.Error("the journal is still there")
			}
			if len(r.Manifest.Recovered) == 0 {
				t.Error("the manifest does not say the commit was completed")
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if name := e.Name(); name[0] == '.' {
					t.Errorf("left in the run directory: %s", name)
				}
			}
		})
	}
}

// TestCommitSwapsAGeneration puts a folder generation in place of another as a commit
// killed between its moves (the old one aside, the new not yet in place): the next
// command completes the swap and removes the old generation.
func TestCommitSwapsAGeneration(t *testing.T) {
	defer func() { CommitHook = nil }()
	dir := filepath.Join(t.TempDir(), "run")
	spec := testSpec(dir, map[string]string{"k": "1"})
	if _, err := Execute(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("export/a-00000-of-00002.parquet", "old")
	write("export/a-00001-of-00002.parquet", "old")
	write(".export.tmp-1/a-00000-of-00001.parquet", "new")
	swap := fakeCommit{moves: []Move{{From: ExportDir, To: ".export.old-1", Aside: true}, {From: ".export.tmp-1", To: ExportDir}},
		remove: []string{".export.old-1"}, outs: []Output{{Path: "export/a-00000-of-00001.parquet", Stage: StageExport, Bytes: 3}}}
	CommitHook = func(_ string, step int) {
		if step == 1 {
			panic(killed{})
		}
	}
	func() {
		defer func() { recover() }()
		Execute(t.Context(), spec, swap)
	}()
	CommitHook = nil
	if _, err := os.Stat(filepath.Join(dir, ExportDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the kill between the moves: export/ is there (%v), want it aside", err)
	}
	os.Remove(filepath.Join(dir, LockFile))
	if _, err := Execute(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) != ManifestFile && filepath.Base(p) != LockFile {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	if !slices.Equal(files, []string{"export/a-00000-of-00001.parquet"}) {
		t.Errorf("files after the completed swap: %v, want the new generation alone", files)
	}
}

// fakeCommit is a stage that commits the given moves.
type fakeCommit struct {
	moves  []Move
	remove []string
	outs   []Output
}

func (fakeCommit) Name() string { return StageExport }

func (s fakeCommit) Run(_ context.Context, r *Run) (Counts, error) {
	return nil, r.Commit(StageExport, s.moves, s.remove, s.outs, "")
}

// A commit journal that is a named pipe or a link out of the run directory is read
// without blocking: stats says a commit is pending, and nothing hangs.
func TestCommitJournalThatIsAPipeNeverBlocks(t *testing.T) {
	for name, plant := range map[string]func(p string) error{
		"pipe":         func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"link to zero": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		dir := t.TempDir()
		if err := plant(filepath.Join(dir, CommitFile)); err != nil {
			t.Fatal(err)
		}
		if stage, ok := PendingCommit(dir); !ok || stage != "unknown" {
			t.Errorf("%s: PendingCommit = %q, %v; want unknown, true", name, stage, ok)
		}
	}
}
