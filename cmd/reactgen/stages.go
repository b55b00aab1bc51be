package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/filter"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/index"
	"github.com/reactgen/reactgen/pipeline"
)

// runState is an open run directory: its lock, manifest and config.
type runState struct {
	dir      pipeline.RunDir
	cfg      pipeline.Config
	ld       *loaded
	lock     *pipeline.Lock
	manifest *pipeline.Manifest
	prompts  prompt.Set
	promptID string // sha256 of the exemplar set as loaded
	// questions are the task file's, loaded (and so validated) before the run directory
	// is touched; nil for filter and export.
	questions  []pipeline.Question
	taskReport dataset.Report
}

// stageOptions are the flags shared by the stage commands.
type stageOptions struct {
	flags    configFlags
	forceNew bool
	skipBad  bool
}

// indexDir is where the corpus index lives.
func (rs *runState) indexDir() string {
	if rs.cfg.Corpus.Index != "" {
		return rs.cfg.Corpus.Index
	}
	return rs.dir.File(pipeline.IndexDir)
}

// checkInputs fails fast, before the run directory is touched, on a task file or corpus
// that is missing. (Evaluation files are checked where they are hashed, in openRun.)
func checkInputs(cfg *pipeline.Config) error {
	if _, err := os.Stat(cfg.Task.Path); err != nil {
		return &pipeline.ConfigError{Key: "task.path", Message: fmt.Sprintf("cannot read task file: %v", err)}
	}
	if cfg.Env.Backend != "local" || (cfg.Corpus.Index != "" && index.Exists(cfg.Corpus.Index)) {
		return nil
	}
	if cfg.Corpus.Path == "" {
		return &pipeline.ConfigError{Key: "corpus.index", Message: fmt.Sprintf("no index at %s and no corpus.path to build one from", cfg.Corpus.Index)}
	}
	if _, err := corpusSources(cfg.Corpus.Path); err != nil {
		return &pipeline.ConfigError{Key: "corpus.path", Message: fmt.Sprintf("cannot read corpus: %v", err)}
	}
	return nil
}

// checkEvalFiles fails on an evaluation file that cannot be read.
func checkEvalFiles(cfg *pipeline.Config) error {
	for _, f := range cfg.Filter.EvalFiles {
		if _, err := os.Stat(f); err != nil {
			return &pipeline.ConfigError{Key: "filter.eval_files", Message: fmt.Sprintf("cannot read evaluation file: %v", err)}
		}
	}
	return nil
}

// loadPrompts loads the exemplars for the configured method and hashes them.
func loadPrompts(cfg *pipeline.Config) (prompt.Set, string, error) {
	set, err := prompt.Load(cfg.Generate.Exemplars, cfg.Task.Name, data.FS)
	if err != nil {
		return prompt.Set{}, "", &pipeline.ConfigError{Key: "generate.exemplars", Message: err.Error()}
	}
	if cfg.Generate.NumExemplars > 0 {
		set = set.Truncate(cfg.Generate.NumExemplars)
	}
	if cfg.Generate.Instruction != "" {
		set.Instruction = cfg.Generate.Instruction
	}
	if cfg.Generate.Policy == "expert" {
		// The expert reads no prompt; the set only shapes the layouts it never sends.
		return set, "expert", nil
	}
	h := sha256.New()
	fmt.Fprintf(h, "%+v", set)
	return set, hex.EncodeToString(h.Sum(nil))[:16], nil
}

// resultKeys are the settings that change what a run produces: a resume must match them.
func resultKeys(cfg *pipeline.Config, taskSHA, corpusID, promptID string) map[string]string {
	g, l := cfg.Generate, cfg.LLM
	keys := map[string]string{
		"task.name": cfg.Task.Name, "task.file_sha256": taskSHA, "corpus": corpusID,
		"env.backend": cfg.Env.Backend, "env.sentences": fmt.Sprint(cfg.Env.Sentences),
		"env.max_observation_chars": fmt.Sprint(cfg.Env.MaxObservationChars),
		"generate.policy":           g.Policy, "generate.method": g.Method, "generate.exemplars": promptID,
		"generate.max_steps": fmt.Sprint(g.MaxStepsFor(cfg.Task.Name)), "generate.seed": fmt.Sprint(g.Seed),
		"generate.shuffle": fmt.Sprint(g.Shuffle), "generate.rationalize": fmt.Sprint(g.Rationalize),
	}
	if g.Policy == "llm" {
		keys["llm.model"] = l.Model
		keys["generate.format"] = g.Format
		keys["llm.temperature"] = fmt.Sprint(l.Temperature)
		keys["llm.top_p"] = fmt.Sprint(l.TopP)
		keys["llm.request_max_tokens"] = fmt.Sprint(l.RequestMaxTokens)
		keys["llm.stop"] = strings.Join(l.Stop, "\x00")
		keys["llm.seed"] = fmt.Sprint(l.Seed)
		keys["generate.samples"] = fmt.Sprint(g.Samples)
		keys["generate.sample_temperature"] = fmt.Sprint(g.SampleTemperature)
	}
	return keys
}

// openRun validates the inputs, takes the run directory's lock and reads or starts its
// manifest. Nothing in an existing run directory is changed before every check passed.
func (a *app) openRun(ctx context.Context, ld *loaded, forceNew bool, command string) (*runState, error) {
	cfg := ld.Config
	if command == "filter" || command == "export" {
		return a.openExisting(ld, command)
	}
	if err := checkInputs(&cfg); err != nil {
		return nil, err
	}
	if cfg.Generate.Policy == "llm" && a.getenv(cfg.LLM.APIKeyEnv) == "" && strings.Contains(cfg.LLM.BaseURL, "api.openai.com") {
		return nil, &pipeline.ConfigError{Key: "llm.api_key_env", Message: fmt.Sprintf(
			"the environment variable %s is empty, and %s needs a key (export %s=..., or point llm.base_url / OPENAI_BASE_URL at your own server)",
			cfg.LLM.APIKeyEnv, cfg.LLM.BaseURL, cfg.LLM.APIKeyEnv)}
	}
	set, promptID, err := loadPrompts(&cfg)
	if err != nil {
		return nil, err
	}
	taskIn, err := pipeline.DescribeInput("task", cfg.Task.Path)
	if err != nil {
		return nil, &pipeline.ConfigError{Key: "task.path", Message: err.Error()}
	}
	// A malformed task file fails here, before the run directory is created or changed.
	questions, report, err := dataset.Load(cfg.Task.Path, dataset.Options{Task: cfg.Task.Name, Format: cfg.Task.Format,
		SkipBad: cfg.Task.SkipBad, Limit: cfg.Task.Limit, Offset: cfg.Task.Offset})
	if err != nil {
		return nil, &usageError{err}
	}
	rs := &runState{dir: pipeline.RunDir{Path: cfg.Run.Out}, cfg: cfg, ld: ld, prompts: set, promptID: promptID,
		questions: questions, taskReport: report}
	corpusID, corpusIn, err := rs.corpusIdentity()
	if err != nil {
		return nil, err
	}
	keys := resultKeys(&cfg, taskIn.SHA256, corpusID, promptID)
	inputs := []pipeline.Input{taskIn}
	if corpusIn != nil {
		inputs = append(inputs, *corpusIn...)
	}
	if cfg.Generate.Policy == "llm" {
		in, err := exemplarInput(cfg.Generate.Exemplars, cfg.Task.Name)
		if err != nil {
			return nil, &pipeline.ConfigError{Key: "generate.exemplars", Message: err.Error()}
		}
		inputs = append(inputs, in)
	}
	for _, f := range cfg.Filter.EvalFiles {
		in, err := pipeline.DescribeInput("eval", f)
		if err != nil {
			return nil, &pipeline.ConfigError{Key: "filter.eval_files", Message: err.Error()}
		}
		inputs = append(inputs, in)
	}

	// Every check that can fail on the inputs has passed: only now is the run directory
	// touched.
	lock, err := pipeline.AcquireLock(rs.dir.Path, command)
	if err != nil {
		return nil, err
	}
	opened := false
	defer func() {
		if !opened {
			lock.Release()
		}
	}()
	rs.lock = lock
	m, err := pipeline.ReadManifest(rs.dir.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		m = nil
	case err != nil:
		return nil, err
	}
	if m != nil {
		if diff := pipeline.CompareResults(m.Results, keys); len(diff) > 0 {
			if !forceNew {
				return nil, &pipeline.ResumeError{Dir: rs.dir.Path, Mismatches: diff}
			}
			aside, err := pipeline.MoveAside(rs.dir.Path)
			if err != nil {
				return nil, fmt.Errorf("--force-new: move old run aside: %w", err)
			}
			a.log.Info("started afresh; the previous run's files were moved aside", "to", aside)
			m = nil
		} else {
			m.Resumes++
		}
	}
	if m == nil {
		runID := cfg.Run.ID
		if runID == "" {
			runID = pipeline.RunID(keys)
		}
		m = &pipeline.Manifest{Schema: 1, RunID: runID, Created: time.Now().UTC(), Stages: map[string]*pipeline.StageRecord{}}
	}
	m.Version = version
	m.Config = redactedConfig(cfg)
	m.Results = keys
	m.Inputs = inputs
	rs.manifest = m
	if err := m.Write(rs.dir.Path); err != nil {
		return nil, err
	}
	opened = true
	return rs, nil
}

// corpusIdentity pins the corpus: the hash of its source file, whether or not the index
// is built yet, so that a run started before its index existed resumes once it does; for
// an index of several sources (the HotpotQA bz2 tree), the index fingerprint.
func (rs *runState) corpusIdentity() (string, *[]pipeline.Input, error) {
	if rs.cfg.Env.Backend == "mediawiki" {
		return "mediawiki:" + rs.cfg.Env.MediaWikiURL, nil, nil
	}
	dir := rs.indexDir()
	if index.Exists(dir) {
		info, err := index.ReadInfo(dir)
		if err != nil {
			return "", nil, &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
		}
		id, ins, err := indexIdentity(dir, info)
		// A corpus file that changed since the index was built is a changed input.
		if st, serr := os.Stat(rs.cfg.Corpus.Path); err == nil && serr == nil && st.Mode().IsRegular() {
			if in, derr := pipeline.DescribeInput("corpus", rs.cfg.Corpus.Path); derr == nil {
				id = "source:" + in.SHA256
			}
		}
		return id, ins, err
	}
	in, err := pipeline.DescribeInput("corpus", rs.cfg.Corpus.Path)
	if err != nil {
		// A directory (the HotpotQA bz2 tree) is pinned once its index is built.
		return "source:" + rs.cfg.Corpus.Path, nil, nil
	}
	return "source:" + in.SHA256, &[]pipeline.Input{in}, nil
}

// indexIdentity is the corpus identity and inputs of a built index (see corpusIdentity).
func indexIdentity(dir string, info index.Info) (string, *[]pipeline.Input, error) {
	ins := []pipeline.Input{{Role: "corpus-index", Path: dir, SHA256: info.Fingerprint}}
	for _, s := range info.Sources {
		ins = append(ins, pipeline.Input{Role: "corpus", Path: s.Path, Bytes: s.Bytes, SHA256: s.SHA256})
	}
	if len(info.Sources) == 1 {
		return "source:" + info.Sources[0].SHA256, &ins, nil
	}
	return info.Fingerprint, &ins, nil
}

// close writes the manifest and releases the lock.
func (rs *runState) close() error {
	err := rs.manifest.Write(rs.dir.Path)
	rs.lock.Release()
	return err
}

// stage runs fn as a named stage, recording its start, end, counts and outcome.
func (rs *runState) stage(ctx context.Context, name string, fn func(ctx context.Context) (map[string]int, error)) error {
	rec := &pipeline.StageRecord{Status: "running", Started: time.Now().UTC()}
	rs.manifest.Stages[name] = rec
	if err := rs.manifest.Write(rs.dir.Path); err != nil {
		return err
	}
	counts, err := fn(ctx)
	rec.Ended = time.Now().UTC()
	rec.Counts = counts
	switch {
	case err == nil:
		rec.Status = "done"
	case errors.Is(err, context.Canceled):
		rec.Status = "interrupted"
		rec.Error = err.Error()
	default:
		rec.Status = "failed"
		rec.Error = err.Error()
	}
	if werr := rs.manifest.Write(rs.dir.Path); werr != nil && err == nil {
		err = werr
	}
	return err
}

// stageIndex builds the local index when it is missing.
func (a *app) stageIndex(ctx context.Context, rs *runState) error {
	if rs.cfg.Env.Backend != "local" || index.Exists(rs.indexDir()) {
		return nil
	}
	return rs.stage(ctx, "index", func(ctx context.Context) (map[string]int, error) {
		a.log.Info("indexing corpus", "corpus", rs.cfg.Corpus.Path, "index", rs.indexDir())
		sources, err := corpusSources(rs.cfg.Corpus.Path)
		if err != nil {
			return nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
		}
		info, err := index.Build(ctx, rs.indexDir(), sources, index.BuildOptions{SkipBad: rs.cfg.Task.SkipBad, Logger: a.log})
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// A corpus that cannot be indexed is bad input, like a malformed task file.
			return nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
		}
		if info.Pages == 0 {
			os.RemoveAll(rs.indexDir())
			return nil, &pipeline.ConfigError{Key: "corpus.path", Message: fmt.Sprintf("%s holds no pages", rs.cfg.Corpus.Path)}
		}
		// Pin the index now that it exists.
		id, insp, _ := indexIdentity(rs.indexDir(), info)
		ins := *insp
		rs.manifest.Results["corpus"] = id
		kept := rs.manifest.Inputs[:0:0]
		for _, in := range rs.manifest.Inputs {
			if in.Role != "corpus" && in.Role != "corpus-index" {
				kept = append(kept, in)
			}
		}
		rs.manifest.Inputs = append(kept, ins...)
		return map[string]int{"pages": int(info.Pages), "skipped": int(info.Skipped), "duplicates": int(info.Duplicates)}, nil
	})
}

// stageFilter reads the episode log and writes kept.jsonl and rejected.jsonl.
func (a *app) stageFilter(ctx context.Context, rs *runState) (filter.Stats, error) {
	var stats filter.Stats
	err := rs.stage(ctx, "filter", func(ctx context.Context) (map[string]int, error) {
		episodes := rs.dir.File(pipeline.EpisodesFile)
		chain, err := filter.New(rs.cfg.Filter, rs.cfg.Task.Name, filter.Options{})
		if err != nil {
			return nil, &pipeline.ConfigError{Key: "filter.rules", Message: err.Error()}
		}
		kept, err := pipeline.CreateJSONL(rs.dir.File(pipeline.KeptFile))
		if err != nil {
			return nil, err
		}
		defer kept.Abort()
		rejected, err := pipeline.CreateJSONL(rs.dir.File(pipeline.RejectedFile))
		if err != nil {
			return nil, err
		}
		defer rejected.Abort()
		// Verdicts copy the log's lines: nothing is encoded again, and the second pass
		// (for dedupe and balance) reads only ids and lines.
		stats, err = chain.RunLines(ctx, pipeline.ReadEpisodeLines(episodes, true),
			func() iter.Seq2[pipeline.EpisodeLine, error] { return pipeline.ReadEpisodeLines(episodes, false) },
			kept.WriteLine, rejected.WriteRejected)
		if err != nil {
			return nil, err
		}
		if err := kept.Commit(); err != nil {
			return nil, err
		}
		if err := rejected.Commit(); err != nil {
			return nil, err
		}
		var outs []pipeline.Output
		for _, f := range []struct {
			name string
			rows int
		}{{pipeline.KeptFile, kept.Rows}, {pipeline.RejectedFile, rejected.Rows}} {
			o, err := pipeline.DescribeOutput(rs.dir.Path, rs.dir.File(f.name), "filter", "jsonl", "", f.rows)
			if err != nil {
				return nil, err
			}
			outs = append(outs, o)
		}
		rs.manifest.SetOutputs("filter", outs)
		counts := map[string]int{"in": stats.In, "kept": stats.Kept, "rejected": stats.Rejected}
		for rule, codes := range stats.ByRule {
			for code, n := range codes {
				counts["reject:"+rule+"/"+code] = n
			}
		}
		return counts, nil
	})
	return stats, err
}

func relOrAbs(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// openExisting opens a run directory for a stage that reads what generate wrote (filter,
// export): the inputs and result keys stay as recorded, since these stages do not change
// the episodes.
func (a *app) openExisting(ld *loaded, command string) (*runState, error) {
	cfg := ld.Config
	if err := checkEvalFiles(&cfg); err != nil {
		return nil, err
	}
	rs := &runState{dir: pipeline.RunDir{Path: cfg.Run.Out}, cfg: cfg, ld: ld}
	lock, err := pipeline.AcquireLock(rs.dir.Path, command)
	if err != nil {
		return nil, err
	}
	m, err := pipeline.ReadManifest(rs.dir.Path)
	if err != nil {
		lock.Release()
		return nil, usagef("%s: %w", rs.dir.Path, pipeline.ErrNoRun)
	}
	rs.lock, rs.manifest = lock, m
	rs.promptID = m.Results["generate.exemplars"]
	return rs, nil
}

// corpusSources expands corpus.path: a file, a folder (the HotpotQA dump), or a glob such
// as wiki-pages/*.jsonl (FEVER's dump is 109 files).
func corpusSources(path string) ([]string, error) {
	if !strings.ContainsAny(path, "*?[") {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
		return []string{path}, nil
	}
	matches, err := filepath.Glob(path)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", path, err)
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("no file matches %q", path)
	}
	return matches, nil
}

// exemplarInput pins the exemplar file by the sha256 of its bytes: the embedded default
// for the task, or the file a FILE or FILE#key reference names.
func exemplarInput(ref, task string) (pipeline.Input, error) {
	if ref == "" {
		name := "prompts/" + task + ".json"
		b, err := fs.ReadFile(data.FS, name)
		if err != nil {
			return pipeline.Input{}, err
		}
		sum := sha256.Sum256(b)
		return pipeline.Input{Role: "exemplars", Path: "embedded:" + name, Bytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}, nil
	}
	file, key, _ := strings.Cut(ref, "#")
	in, err := pipeline.DescribeInput("exemplars", file)
	if err != nil {
		return pipeline.Input{}, err
	}
	if key != "" {
		in.Path += "#" + key
	}
	return in, nil
}
