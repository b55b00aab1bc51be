package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/safefile"
)

// ManifestSchema is the version of manifest.json's layout.
const ManifestSchema = 1

// The stages of a run, by the name the manifest records them under.
const (
	StageIndex    = "index"    // build the local corpus index when it is missing
	StageImport   = "import"   // episodes from existing corpora instead of generate
	StageGenerate = "generate" // the agent: episodes.jsonl
	StageScore    = "score"    // reactgen eval: the metrics of the episodes, eval.json
	StageFilter   = "filter"   // kept.jsonl and rejected.jsonl
	StageExport   = "export"   // the training files and the dataset card
)

// StageOrder is the order stages run in, whatever order they are handed in.
var StageOrder = []string{StageIndex, StageImport, StageRound, StageGenerate, StageScore, StageFilter, StageExport}

// Stage statuses, as the manifest records them.
const (
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	StatusBudget      = "budget" // the LLM budget ran out: stopped cleanly, resumable
)

// Counts are what a stage did, by name ("episodes", "kept", "reject:correct/wrong_answer").
type Counts = map[string]int

// Stage is one step of a run. The concrete stages live with the work they do
// (generate.Stage, filter.Stage, export.Stage, index.Stage, ingest.Stage) and receive
// their typed config section when they are built; pipeline runs them.
//
// Run does the stage's work in r's directory and returns its counts, which the manifest
// records whether or not it failed. It may read and change r.Manifest (its outputs, the
// pins of what it built); the Run writes the manifest. An error that is the user's to fix
// (a *ConfigError or *InputError) ends the command with exit 2, and on a new run
// directory leaves no manifest behind; context.Canceled records the stage as interrupted.
type Stage interface {
	Name() string
	Run(ctx context.Context, r *Run) (Counts, error)
}

// Optional is a Stage that may have nothing to do (an index that exists already). A
// stage that is not Needed is skipped and leaves no record.
type Optional interface {
	Needed(r *Run) bool
}

// ResumeChecker is a Stage with a condition of its own for resuming a run, beyond the
// result keys (the index stage: the index the run read is still the one there).
// CheckResume is called with the recorded manifest before anything in the run directory
// changes; an error refuses the resume.
type ResumeChecker interface {
	CheckResume(recorded *Manifest) error
}

// Mode says what a command expects of its run directory.
type Mode int

const (
	// Resume starts a new run or resumes the one in the directory, whose result keys must
	// match (or, with Spec.ForceNew, whose files are moved aside).
	Resume Mode = iota
	// Existing works on a run that generate or import made (filter, export): the result
	// keys and inputs stay as recorded, and only the sections of Spec.Config replace
	// their recorded counterparts.
	Existing
	// New needs a directory that holds no run yet (import).
	New
)

// Spec is what a command knows of its run before the directory is touched. Everything
// in it is read and checked first: Execute changes nothing on disk when a check fails.
type Spec struct {
	Dir      string
	Command  string // who holds the lock, as a second process is told
	Mode     Mode
	Version  string            // reactgen's version
	Config   map[string]any    // the effective config, secrets redacted (Config.Redacted)
	Results  map[string]string // the settings that change results (Config.ResultKeys)
	Inputs   []Input           // every file outside the run directory the run reads
	RunID    string            // run.id; empty derives one from Results
	ForceNew bool              // Resume: move a mismatching run's files aside instead of refusing
	Logger   *slog.Logger      // nil: discard
	// ConfigFile is the config file named on the command line, recorded so that later
	// commands (reactgen train's eval hint) can name it; empty keeps what was recorded.
	ConfigFile string
}

// Run is an open run directory: its lock and its manifest, while stages run.
type Run struct {
	Dir      RunDir
	Manifest *Manifest
	log      *slog.Logger
	lock     *Lock
	fresh    bool   // the directory held no manifest when the run opened
	created  bool   // the directory did not exist when the run opened
	status   string // the status the running stage ends with, when SetStatus set one
}

// Execute opens the run directory that spec describes (taking its lock, checking that a
// resume would not mix results), runs the stages in StageOrder, recording each one's
// start, end, counts and outcome in the manifest, and closes it (writing the manifest and
// releasing the lock). It stops at the first stage that fails, and after any stage once
// ctx is done. The returned Run, when not nil, is closed; its Manifest is what was written.
func Execute(ctx context.Context, spec Spec, stages ...Stage) (*Run, error) {
	r, err := open(spec, stages)
	if err != nil {
		return nil, err
	}
	err = r.run(ctx, stages)
	if r.fresh && IsBadInput(err) {
		// Bad input found by a stage of a new run (a corpus that cannot be indexed):
		// leave no manifest behind, so the directory does not pass for a run.
		r.discard()
		return r, err
	}
	if cerr := r.close(); err == nil {
		err = cerr
	}
	return r, err
}

// open takes the lock and reads or starts the manifest. Nothing in an existing run
// directory is changed before every check passed.
func open(spec Spec, stages []Stage) (*Run, error) {
	log := spec.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Run{Dir: RunDir{Path: spec.Dir}, log: log}
	if err := checkPath(spec.Dir); err != nil {
		return nil, err
	}
	if err := r.Dir.CheckLinks(); err != nil {
		return nil, err
	}
	switch exists := r.Dir.Exists(); {
	case spec.Mode == Existing && !exists:
		return nil, noRun(spec.Dir)
	case spec.Mode == New && exists:
		return nil, &InputError{Err: fmt.Errorf("%s already holds a run; use a new directory", spec.Dir)}
	default:
		r.fresh = !exists
	}
	if r.fresh {
		if err := r.Dir.checkNew(); err != nil {
			return nil, err
		}
	} else if _, err := ReadManifest(spec.Dir); err != nil {
		return nil, err // another program's manifest.json: not a run, and not touched
	}
	_, err := os.Lstat(spec.Dir)
	r.created = errors.Is(err, os.ErrNotExist)
	lock, err := AcquireLock(spec.Dir, spec.Command)
	if err != nil {
		return nil, err
	}
	r.lock = lock
	// Again under the lock, which a link planted since the first look got past.
	err = r.Dir.CheckLinks()
	if err == nil {
		// What a process killed while it wrote the manifest left.
		atomicfile.RemoveStale(spec.Dir, []string{ManifestFile}, nil)
	}
	if err == nil {
		err = r.start(spec, stages)
	}
	if err != nil {
		if r.fresh {
			r.discard()
		} else {
			lock.Release()
		}
		return nil, err
	}
	return r, nil
}

// discard undoes what opening a new run directory wrote, for a new run that failed on
// bad input: the manifest, an empty episode log, the lock, and the directory itself
// when the run created it and nothing else is left in it.
func (r *Run) discard() {
	os.Remove(r.Dir.File(ManifestFile))
	if st, err := os.Lstat(r.Dir.File(EpisodesFile)); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
		os.Remove(r.Dir.File(EpisodesFile))
	}
	r.lock.Remove()
	if r.created {
		os.Remove(r.Dir.Path) // fails, as it should, unless it is empty
	}
}

// noRun is the error for a directory that holds no run.
func noRun(dir string) error {
	return &InputError{Err: fmt.Errorf("%s: %w; run `reactgen run` or `reactgen generate` first", dir, ErrNoRun)}
}

// start reads the manifest, checks it against spec and writes what the run is now.
func (r *Run) start(spec Spec, stages []Stage) error {
	m, err := ReadManifest(r.Dir.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		m = nil
	case err != nil:
		return err
	}
	if m != nil {
		// A commit a kill interrupted is finished first, so that no stage reads half of it.
		r.Manifest = m
		msg, err := r.recoverCommit()
		if err != nil {
			return err
		}
		if msg != "" {
			r.log.Warn(msg)
			m.Recovered = append(m.Recovered, msg)
		}
		atomicfile.RemoveStale(r.Dir.Path, []string{CommitFile}, nil) // a journal a kill cut short while it was written
	}
	if spec.Mode == Existing {
		if m == nil {
			return noRun(r.Dir.Path)
		}
		if m.Config == nil {
			m.Config = map[string]any{}
		}
		for section, v := range spec.Config {
			m.Config[section] = v
		}
		r.Manifest = m
		return nil
	}
	if m != nil {
		if diff := CompareResults(m.Results, spec.Results); len(diff) > 0 {
			if !spec.ForceNew {
				return &ResumeError{Dir: r.Dir.Path, Mismatches: diff}
			}
			aside, err := MoveAside(r.Dir.Path)
			if err != nil {
				return fmt.Errorf("--force-new: move old run aside: %w", err)
			}
			r.log.Info("started afresh; the previous run's files were moved aside", "to", aside)
			m = nil
		} else {
			for _, s := range stages {
				if c, ok := s.(ResumeChecker); ok {
					if err := c.CheckResume(m); err != nil {
						return err
					}
				}
			}
			m.Resumes++
		}
	}
	if m == nil {
		m = newManifest(cmp.Or(spec.RunID, RunID(spec.Results)))
	}
	m.Version = spec.Version
	if spec.ConfigFile != "" {
		m.ConfigFile = spec.ConfigFile
	}
	m.Config = spec.Config
	m.Results = spec.Results
	m.Inputs = spec.Inputs
	r.Manifest = m
	return m.Write(r.Dir.Path)
}

// newManifest is the one place a manifest is made.
func newManifest(runID string) *Manifest {
	return &Manifest{Schema: ManifestSchema, RunID: runID, Created: time.Now().UTC(), Stages: map[string]*StageRecord{}}
}

// run runs the stages in StageOrder.
func (r *Run) run(ctx context.Context, stages []Stage) error {
	ordered := slices.Clone(stages)
	for _, s := range ordered {
		if !slices.Contains(StageOrder, s.Name()) {
			return fmt.Errorf("pipeline: unknown stage %q", s.Name())
		}
	}
	slices.SortStableFunc(ordered, func(a, b Stage) int {
		return slices.Index(StageOrder, a.Name()) - slices.Index(StageOrder, b.Name())
	})
	for _, s := range ordered {
		if o, ok := s.(Optional); ok && !o.Needed(r) {
			continue
		}
		if err := r.record(ctx, s); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// record runs one stage, recording its start, end, counts and outcome.
func (r *Run) record(ctx context.Context, s Stage) error {
	rec := &StageRecord{Status: StatusRunning, Started: time.Now().UTC()}
	r.Manifest.Stages[s.Name()] = rec
	if err := r.Manifest.Write(r.Dir.Path); err != nil {
		return err
	}
	r.status = ""
	counts, err := s.Run(ctx, r)
	rec.Ended = time.Now().UTC()
	rec.Counts = counts
	switch {
	case err == nil:
		rec.Status = cmp.Or(r.status, StatusDone)
	case errors.Is(err, context.Canceled):
		rec.Status = StatusInterrupted
		rec.Error = err.Error()
	default:
		rec.Status = StatusFailed
		rec.Error = err.Error()
	}
	if werr := r.Manifest.Write(r.Dir.Path); werr != nil && err == nil {
		err = werr
	}
	return err
}

// SetStatus sets the status the running stage ends with when it returns no error, in
// place of StatusDone (StatusBudget: it stopped cleanly before its work was done).
func (r *Run) SetStatus(status string) { r.status = status }

// Fresh reports whether the run directory held no run when it was opened.
func (r *Run) Fresh() bool { return r.fresh }

// close writes the manifest and releases the lock.
func (r *Run) close() error {
	err := r.Manifest.Write(r.Dir.Path)
	r.lock.Release()
	return err
}

// Report tells the user where a run's files are: the episode log, the verdicts and every
// exported file, with its rows and bytes (a file of no rows, such as a hand-off script
// or a plot, with its bytes only).
func (r *Run) Report(w io.Writer) {
	m := r.Manifest
	fmt.Fprintf(w, "run %s in %s\n", m.RunID, r.Dir.Path)
	if st, ok := m.Stages[StageGenerate]; ok {
		fmt.Fprintf(w, "  episodes: %s (%d in the log; this run added %d, %d correct)\n", r.Dir.File(EpisodesFile),
			st.Counts["log_records"], st.Counts["episodes"], st.Counts["correct"])
	}
	if st, ok := m.Stages[StageFilter]; ok {
		fmt.Fprintf(w, "  kept: %s (%d), rejected: %s (%d)\n", r.Dir.File(KeptFile), st.Counts["kept"], r.Dir.File(RejectedFile), st.Counts["rejected"])
	}
	for _, o := range m.Outputs {
		if o.Stage != StageExport || o.Format == "arrow-meta" {
			continue // the HF folder's metadata files go with its .arrow files
		}
		path := filepath.Join(r.Dir.Path, o.Path)
		switch {
		case o.Rows == 0 && o.Format == "card":
			fmt.Fprintf(w, "  card: %s\n", path)
		case o.Rows == 0: // a hand-off file or a plot: bytes, not rows
			fmt.Fprintf(w, "  %s: %s (%d bytes)\n", o.Format, path, o.Bytes)
		default:
			fmt.Fprintf(w, "  %s: %s (%d rows, %d bytes)\n", o.Format, path, o.Rows, o.Bytes)
		}
	}
}

// RecordedConfig is the effective config a run directory's manifest holds (secrets
// redacted), for the stages that work on an existing run without a config file.
func RecordedConfig(dir string) (map[string]any, error) {
	m, err := ReadManifest(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, noRun(dir)
	}
	if err != nil {
		return nil, err
	}
	return m.Config, nil
}

// InputError is input the user must fix: a flag, a config value, a task file, a corpus
// or a file to import. It exits 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// IsBadInput reports whether err is the user's input to fix (*InputError, *ConfigError,
// *safefile.LinkError)
// rather than a failure of the run.
// IsDiskFailure reports an error of the disk rather than of the input: no space left, a
// quota, a read-only file system, an I/O error, or SQLite saying the same (full,
// read-only, I/O error). A command that meets one failed at run time (exit 1), whatever
// stage or input it was handling; running it again where there is room succeeds.
func IsDiskFailure(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EIO) {
		return true
	}
	var coded interface{ Code() int } // modernc.org/sqlite's *Error, without importing it
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case 8, 10, 13: // SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL
			return true
		}
	}
	return false
}

func IsBadInput(err error) bool {
	var ie *InputError
	var ce *ConfigError
	var le *safefile.LinkError
	return errors.As(err, &ie) || errors.As(err, &ce) || errors.As(err, &le)
}
