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

func dirOf(p string) string  { return filepath.Dir(p) }
func baseOf(p string) string { return filepath.Base(p) }

// RunDir is a run directory: the manifest, the episode log, the filter's verdicts, the
// exports and the caches of one run.
type RunDir struct {
	Path string
}

// File returns the path of a file inside the run directory.
func (d RunDir) File(name string) string { return filepath.Join(d.Path, name) }

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
}

// EndpointShare is one pool endpoint's part in a run.
type EndpointShare struct {
	URL       string  `json:"url"`
	Served    int64   `json:"served"` // successful requests
	Failed    int64   `json:"failed"` // failed tries, each retried
	Moved     int64   `json:"moved"`  // in-flight requests moved elsewhere when it was taken out
	Ejections int64   `json:"ejections"`
	Share     float64 `json:"share"` // of all endpoints' served requests
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

// ReadManifest reads a run directory's manifest.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if m.Stages == nil {
		m.Stages = map[string]*StageRecord{}
	}
	return &m, nil
}

// Write stores the manifest atomically.
func (m *Manifest) Write(dir string) error {
	m.Updated = time.Now().UTC()
	return WriteFileAtomic(filepath.Join(dir, ManifestFile), func(w io.Writer) error {
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
	n, sum, err := FileDigest(path)
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
	n, sum, err := FileDigest(path)
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
// --force-new: nothing is deleted.
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
		if name == LockFile || strings.HasPrefix(name, "previous-") || name == LLMCacheDir || name == IndexDir || name == WikiCacheDir {
			continue // caches stay: they are content-addressed and still valid
		}
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dest, name)); err != nil {
			return "", err
		}
	}
	return dest, nil
}
