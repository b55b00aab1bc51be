package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/safefile"
)

// Names of the files in a run directory.
const (
	ManifestFile = "manifest.json"
	EpisodesFile = "episodes.jsonl"
	KeptFile     = "kept.jsonl"
	RejectedFile = "rejected.jsonl"
	ExportDir    = "export"
	IndexDir     = "index"
	LLMCacheDir  = "llm-cache"
	WikiCacheDir = "wiki-cache"
	BatchDir     = "batches" // llm.mode batch: wave files and batches.json
)

// RunDir is a run directory: the manifest, the episode log, the filter's verdicts, the
// exports and the caches of one run.
type RunDir struct {
	Path string
}

// File returns the path of a file inside the run directory.
func (d RunDir) File(name string) string { return filepath.Join(d.Path, name) }

// ownedNames are the entries of a run directory that reactgen writes (eval.json is the
// score stage's); everything else in one is the user's, and is never moved or written.
var ownedNames = []string{LockFile, ManifestFile, EpisodesFile, KeptFile, RejectedFile, ExportDir, IndexDir,
	LLMCacheDir, WikiCacheDir, "eval.json", CommitFile}

// Owned reports whether name, an entry of a run directory, is one reactgen writes: a
// file or folder of ownedNames, a "previous-*" folder of --force-new, or the hidden
// temporary, lock and build entries of atomic writes and index builds beside them.
func Owned(name string) bool {
	if slices.Contains(ownedNames, name) || strings.HasPrefix(name, "previous-") {
		return true
	}
	for _, n := range ownedNames {
		rest, ok := strings.CutPrefix(name, "."+n+".")
		if ok && (strings.HasPrefix(rest, "tmp-") || strings.HasPrefix(rest, "building-") || strings.HasPrefix(rest, "old-") || rest == "lock") {
			return true
		}
	}
	return false
}

// CheckLinks refuses a run directory in which an entry reactgen owns is a symbolic
// link: reactgen would write through it (truncate the file a lock links to, append
// episodes to another file, export into another folder). The error is a *safefile.LinkError
// naming the path.
func (d RunDir) CheckLinks() error {
	for _, name := range ownedNames {
		if err := safefile.NotLink(d.File(name)); err != nil {
			return err
		}
	}
	return nil
}

// ForeignError is a directory named as a new run directory that holds files reactgen
// did not write.
type ForeignError struct {
	Dir   string
	Names []string // the first few entries that are not reactgen's
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s holds files reactgen did not write (%s), so it is not a run directory: choose an empty or new directory for --out",
		e.Dir, strings.Join(e.Names, ", "))
}

// checkNew refuses a directory that is to become a new run directory but holds files
// reactgen did not write (the user's home, a project folder, "/"); a missing or empty
// one, or one with only reactgen's entries (an index built first, a cache), is fine.
func (d RunDir) checkNew() error {
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read run directory %s: %w", d.Path, err)
	}
	var foreign []string
	for _, e := range entries {
		if !Owned(e.Name()) {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	if len(foreign) > 5 {
		foreign = append(foreign[:5], fmt.Sprintf("and %d more", len(foreign)-5))
	}
	return &InputError{Err: &ForeignError{Dir: d.Path, Names: foreign}}
}

// checkPath refuses a run directory that is the root of the file system.
func checkPath(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &InputError{Err: fmt.Errorf("run directory %s: %w", dir, err)}
	}
	if abs == string(filepath.Separator) {
		return &InputError{Err: fmt.Errorf("run directory %s is the root of the file system: choose a directory of its own for --out", dir)}
	}
	return nil
}

// Exists reports whether the run directory already holds a manifest.
func (d RunDir) Exists() bool {
	_, err := os.Stat(d.File(ManifestFile))
	return err == nil
}

// Input is one file a run read, pinned by its hash.
type Input struct {
	Role   string `json:"role"` // task, corpus, corpus-index, exemplars, cot-exemplars, eval
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Output is one file a run wrote.
type Output struct {
	Path   string `json:"path"` // relative to the run directory
	Stage  string `json:"stage"`
	Format string `json:"format,omitempty"`
	Split  string `json:"split,omitempty"`
	Rows   int    `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// StageRecord is one stage's entry in the manifest.
type StageRecord struct {
	Status  string         `json:"status"` // running, done, failed, interrupted, budget
	Started time.Time      `json:"started"`
	Ended   time.Time      `json:"ended,omitzero"`
	Counts  map[string]int `json:"counts,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// Manifest is manifest.json: what a run was, what it read and what it wrote.
type Manifest struct {
	Schema     int                     `json:"schema"`
	Version    string                  `json:"reactgen_version"`
	RunID      string                  `json:"run_id"`
	Created    time.Time               `json:"created"`
	Updated    time.Time               `json:"updated"`
	Config     map[string]any          `json:"config"`
	ConfigFile string                  `json:"config_file,omitempty"` // the config file named on the command line
	Results    map[string]string       `json:"result_keys"`           // everything that changes results; a resume must match
	Inputs     []Input                 `json:"inputs"`
	Stages     map[string]*StageRecord `json:"stages"`
	Outputs    []Output                `json:"outputs"`
	Resumes    int                     `json:"resumes"`
	Recovered  []string                `json:"recovered,omitempty"` // torn lines dropped on resume
	Round      int                     `json:"round,omitempty"`     // STaR: this run's round (2, 3, ...); 0 = not a round
	Rounds     []RoundRecord           `json:"rounds,omitempty"`    // STaR: the earlier rounds, oldest first
	Training   []TrainingJob           `json:"training,omitempty"`  // fine-tuning jobs started from the export, oldest first
	// Endpoints is what each server of an endpoint pool (llm.endpoints) served, summed
	// over the run's sessions.
	Endpoints []EndpointShare `json:"endpoints,omitempty"`
	// Shards are the shard runs a merged run was made of (reactgen merge).
	Shards []ShardInput `json:"shards,omitempty"`
	// ExportedFrom is the sha256 of the kept.jsonl the export was made from: when it is
	// not the filter's current kept.jsonl, the export is older than the filter result.
	ExportedFrom string `json:"exported_from,omitempty"`
}

// EndpointShare is one pool endpoint's part in a run.
type EndpointShare struct {
	URL       string  `json:"url"`
	Served    int64   `json:"served"` // successful requests
	Failed    int64   `json:"failed"` // failed tries, each retried
	Moved     int64   `json:"moved"`  // in-flight requests moved elsewhere when it was taken out
	Ejections int64   `json:"ejections"`
	Stalled   int64   `json:"stalled,omitempty"`  // requests moved elsewhere after llm.stall_timeout
	Disabled  string  `json:"disabled,omitempty"` // why it was taken out for the run (it refused the key)
	Share     float64 `json:"share"`              // of all endpoints' served requests
}

// AddEndpoints adds one session's endpoint counts to the manifest's, by URL, and
// recomputes the shares.
func (m *Manifest) AddEndpoints(add []EndpointShare) {
	for _, a := range add {
		i := slices.IndexFunc(m.Endpoints, func(e EndpointShare) bool { return e.URL == a.URL })
		if i < 0 {
			m.Endpoints = append(m.Endpoints, EndpointShare{URL: a.URL})
			i = len(m.Endpoints) - 1
		}
		e := &m.Endpoints[i]
		e.Served += a.Served
		e.Failed += a.Failed
		e.Moved += a.Moved
		e.Ejections += a.Ejections
		e.Stalled += a.Stalled
		if a.Disabled != "" {
			e.Disabled = a.Disabled
		}
	}
	var total int64
	for _, e := range m.Endpoints {
		total += e.Served
	}
	for i := range m.Endpoints {
		m.Endpoints[i].Share = 0
		if total > 0 {
			m.Endpoints[i].Share = float64(m.Endpoints[i].Served) / float64(total)
		}
	}
}

// maxManifestBytes bounds manifest.json.
const maxManifestBytes = 64 << 20

// ReadManifest reads a run directory's manifest.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	if err := safefile.NotLink(path); err != nil {
		return nil, err
	}
	b, err := safefile.ReadFile(path, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if m.Schema < 1 || m.RunID == "" {
		return nil, &InputError{Err: fmt.Errorf("%s is not a reactgen manifest (no schema or run_id), so %s is not a run directory", path, dir)}
	}
	if m.Stages == nil {
		m.Stages = map[string]*StageRecord{}
	}
	return &m, nil
}

// Write stores the manifest atomically.
func (m *Manifest) Write(dir string) error {
	m.Updated = time.Now().UTC()
	return atomicfile.WriteFile(filepath.Join(dir, ManifestFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}

// SetOutputs replaces the outputs of one stage.
func (m *Manifest) SetOutputs(stage string, outs []Output) {
	kept := m.Outputs[:0:0]
	for _, o := range m.Outputs {
		if o.Stage != stage {
			kept = append(kept, o)
		}
	}
	m.Outputs = append(kept, outs...)
	sort.SliceStable(m.Outputs, func(i, j int) bool { return m.Outputs[i].Path < m.Outputs[j].Path })
}

// DescribeOutput hashes a written file of the run directory into an Output.
func DescribeOutput(runDir, path, stage, format, split string, rows int) (Output, error) {
	n, sum, err := atomicfile.Digest(path)
	if err != nil {
		return Output{}, err
	}
	rel, err := filepath.Rel(runDir, path)
	if err != nil {
		rel = path
	}
	return Output{Path: filepath.ToSlash(rel), Stage: stage, Format: format, Split: split, Rows: rows, Bytes: n, SHA256: sum}, nil
}

// DescribeInput hashes an input file.
func DescribeInput(role, path string) (Input, error) {
	n, sum, err := atomicfile.Digest(path)
	if err != nil {
		return Input{}, fmt.Errorf("%s %s: %w", role, path, err)
	}
	return Input{Role: role, Path: path, Bytes: n, SHA256: sum}, nil
}

// Mismatch is one result-affecting setting that differs between a run directory and the
// config that tries to resume it.
type Mismatch struct {
	Key, Was, Now string
}

// CompareResults lists what differs between the recorded and the current result keys.
func CompareResults(was, now map[string]string) []Mismatch {
	keys := map[string]bool{}
	for k := range was {
		keys[k] = true
	}
	for k := range now {
		keys[k] = true
	}
	var out []Mismatch
	for k := range keys {
		if was[k] != now[k] {
			out = append(out, Mismatch{Key: k, Was: was[k], Now: now[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// ResumeError says that a run directory was made with settings that alter results.
type ResumeError struct {
	Dir        string
	Mismatches []Mismatch
}

func (e *ResumeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run directory %s was made with other settings, so resuming it would mix results:", e.Dir)
	for _, m := range e.Mismatches {
		fmt.Fprintf(&b, "\n  %s: was %q, now %q", m.Key, short(m.Was), short(m.Now))
	}
	b.WriteString("\nuse another --out, or --force-new to start this directory afresh (its old files are moved aside, not deleted)")
	return b.String()
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// ErrNoRun is returned for a directory that holds no run.
var ErrNoRun = errors.New("not a run directory (no manifest.json)")

// RunID derives a run id from the result keys when none is configured.
func RunID(results map[string]string) string {
	keys := make([]string, 0, len(results))
	for k := range results {
		if k != ShardKey { // the shards of a run, and the run they merge into, share its id
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, results[k])
	}
	return "run-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// MoveAside renames an existing run directory's files into a dated subfolder, for
// --force-new: nothing is deleted, and only what reactgen wrote is moved.
func MoveAside(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	dest := filepath.Join(dir, "previous-"+time.Now().UTC().Format("20060102T150405"))
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", err
	}
	for _, e := range entries {
		name := e.Name()
		if !Owned(name) {
			continue // the user's: never moved
		}
		if name == LockFile || strings.HasPrefix(name, "previous-") || name == LLMCacheDir || name == IndexDir || name == WikiCacheDir || strings.HasPrefix(name, "."+IndexDir+".") {
			continue // caches stay: they are content-addressed and still valid
		}
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dest, name)); err != nil {
			return "", err
		}
	}
	return dest, nil
}
