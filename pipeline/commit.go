package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/safefile"
)

// CommitFile is the journal of a commit in progress (Run.Commit) in a run directory. It
// exists only while a stage moves its finished files into place; one left by a kill is
// completed by the next command that opens the run (and reported by stats meanwhile).
const CommitFile = "commit.json"

// Move is one rename of a commit, with paths relative to the run directory. From is a
// finished temporary file or folder with a name of its own (a later commit never reuses
// it), so the move is to be done while From exists; an Aside move puts the current
// generation away under a fresh name instead, and is done once To exists.
type Move struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Aside bool   `json:"aside,omitempty"`
}

// commitJournal is what CommitFile holds: enough to finish the commit after a kill.
type commitJournal struct {
	Stage   string   `json:"stage"`
	Moves   []Move   `json:"moves"`
	Remove  []string `json:"remove,omitempty"` // removed (with their contents) once the moves are done
	Outputs []Output `json:"outputs"`          // the stage's outputs once committed
	// Extra is what else the manifest records of the commit (Manifest.ExportedFrom).
	ExportedFrom string `json:"exported_from,omitempty"`
}

// CommitHook, when set (by tests only), is called after each step of a commit: step 0
// once the journal is written, step i after the i-th move. A test kills the process
// there to check that the next command completes the commit.
var CommitHook func(stage string, step int)

// Commit moves a stage's finished files into place as one unit and records them as the
// stage's outputs in the manifest: it writes the journal (CommitFile), does the moves,
// removes what remove names (an earlier generation), sets the outputs (and, when not
// empty, Manifest.ExportedFrom), writes the manifest, and only then removes the journal.
// A kill at any point leaves either the previous state, untouched, or a journal from
// which the next command that opens the run (Execute, under the run's lock) finishes
// the same commit, so that no reader ever works on half of it: kept.jsonl and
// rejected.jsonl are one filter's, and export/ is one export's, whatever is killed when.
func (r *Run) Commit(stage string, moves []Move, remove []string, outputs []Output, exportedFrom string) error {
	j := commitJournal{Stage: stage, Moves: moves, Remove: remove, Outputs: outputs, ExportedFrom: exportedFrom}
	path := r.Dir.File(CommitFile)
	if err := atomicfile.WriteFile(path, func(w io.Writer) error { return json.NewEncoder(w).Encode(j) }); err != nil {
		return fmt.Errorf("commit %s: %w", stage, err)
	}
	if CommitHook != nil {
		CommitHook(stage, 0)
	}
	if err := r.finish(j); err != nil {
		return fmt.Errorf("commit %s: %w (the next command on %s completes it)", stage, err, r.Dir.Path)
	}
	return nil
}

// finish does what a journal says, from wherever an earlier attempt stopped, and removes
// the journal.
func (r *Run) finish(j commitJournal) error {
	for i, m := range j.Moves {
		from, to := r.Dir.File(m.From), r.Dir.File(m.To)
		if _, err := os.Lstat(from); errors.Is(err, os.ErrNotExist) {
			continue // done before
		}
		if m.Aside {
			if _, err := os.Lstat(to); err == nil {
				continue // put aside before; From is the next generation already
			}
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.Rename(from, to); err != nil {
			return fmt.Errorf("move %s to %s: %w", m.From, m.To, err)
		}
		atomicfile.SyncDir(filepath.Dir(to))
		if CommitHook != nil {
			CommitHook(j.Stage, i+1)
		}
	}
	for _, rel := range j.Remove {
		if err := os.RemoveAll(r.Dir.File(rel)); err != nil {
			return fmt.Errorf("remove %s: %w", rel, err)
		}
	}
	r.Manifest.SetOutputs(j.Stage, j.Outputs)
	if j.ExportedFrom != "" {
		r.Manifest.ExportedFrom = j.ExportedFrom
	}
	if err := r.Manifest.Write(r.Dir.Path); err != nil {
		return err
	}
	if err := os.Remove(r.Dir.File(CommitFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	atomicfile.SyncDir(r.Dir.Path)
	return nil
}

// maxCommitBytes bounds a commit journal (a few moves: about 200 bytes each).
const maxCommitBytes = 16 << 20

// recoverCommit finishes a commit a kill interrupted, if the run directory holds its
// journal, and says what it did ("" for nothing).
func (r *Run) recoverCommit() (string, error) {
	b, err := safefile.ReadIn(r.Dir.Path, CommitFile, maxCommitBytes)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", CommitFile, err)
	}
	var j commitJournal
	if err := json.Unmarshal(b, &j); err != nil {
		return "", fmt.Errorf("%s in %s is not a commit journal: %w", CommitFile, r.Dir.Path, err)
	}
	if err := r.finish(j); err != nil {
		return "", fmt.Errorf("complete the interrupted commit of stage %s: %w", j.Stage, err)
	}
	return fmt.Sprintf("completed the commit of stage %s that a kill interrupted (%d moves)", j.Stage, len(j.Moves)), nil
}

// PendingCommit names the stage whose commit a kill interrupted, if the run directory
// holds its journal: the next command that opens the run completes it. Readers that do
// not take the run's lock (stats) say so instead of reading half a result.
func PendingCommit(dir string) (string, bool) {
	b, err := safefile.ReadIn(dir, CommitFile, maxCommitBytes)
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		return "unknown", true
	}
	var j commitJournal
	if json.Unmarshal(b, &j) != nil {
		return "unknown", true
	}
	return j.Stage, true
}
