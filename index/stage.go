package index

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/reactgen/reactgen/index/wikidump"
	"github.com/reactgen/reactgen/pipeline"
)

// Stage is the index stage of a run: it builds the local index of the corpus when the
// index is missing, or rebuilds it when it was built from other sources than the run's
// corpus or in another format version (the run's "corpus" result key, from Identity, is the identity the index must
// have).
type Stage struct {
	Corpus  string // corpus.path: a file, a folder or a glob (Sources)
	Dir     string // the index directory
	SkipBad bool   // skip malformed records and count them
	Logger  *slog.Logger
}

var (
	_ pipeline.Stage         = Stage{}
	_ pipeline.Optional      = Stage{}
	_ pipeline.ResumeChecker = Stage{}
)

// Name implements pipeline.Stage.
func (Stage) Name() string { return pipeline.StageIndex }

// Needed implements pipeline.Optional: an index whose identity is the run's is not
// built again.
func (s Stage) Needed(r *pipeline.Run) bool {
	if s.Corpus == "" {
		return false // corpus.index alone: the index is the corpus
	}
	info, err := ReadInfo(s.Dir)
	return err != nil || info.FormatVersion != FormatVersion || info.Identity != r.Manifest.Results[pipeline.CorpusKey]
}

// CheckResume implements pipeline.ResumeChecker: a run that has read the index (its
// generate stage started) is not resumed over an index of other sources, which someone
// rebuilt since (reactgen index --force on a shared corpus.index): the episodes still to
// come would search another corpus than those written.
func (s Stage) CheckResume(recorded *pipeline.Manifest) error {
	if _, started := recorded.Stages[pipeline.StageGenerate]; !started {
		return nil // nothing read the index yet: a stale one is rebuilt
	}
	info, err := ReadInfo(s.Dir)
	if err != nil {
		return nil // missing: rebuilt from the corpus, and checked against the pin
	}
	if want := recorded.Results[pipeline.CorpusKey]; info.Identity != want {
		return &pipeline.InputError{Err: fmt.Errorf("this run read the index %s as %s (built from %s); it now holds %s (built %s from %s), so resuming would mix results: "+
			"rebuild it from the run's corpus (reactgen index --force --corpus %s --out %s) or use another --out",
			s.Dir, want, s.Corpus, cmpOr(info.Identity, "an index with no identity"), info.BuiltAt.Format("2006-01-02 15:04:05Z07:00"),
			sourceNames(info.Sources), s.Corpus, s.Dir)}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sourceNames lists an index's source paths for a message, the first few of many.
func sourceNames(files []wikidump.File) string {
	names := make([]string, 0, 3)
	for i, f := range files {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(files)-3))
			break
		}
		names = append(names, f.Path)
	}
	return strings.Join(names, ", ")
}

// Run implements pipeline.Stage. A corpus that cannot be indexed is bad input, like a
// malformed task file: the error is a *pipeline.ConfigError naming corpus.path.
func (s Stage) Run(ctx context.Context, r *pipeline.Run) (pipeline.Counts, error) {
	want := r.Manifest.Results[pipeline.CorpusKey]
	force := false
	if info, err := ReadInfo(s.Dir); err == nil {
		force = true
		if s.Logger != nil {
			s.Logger.Warn("the index was built from other sources than the corpus, or in another format version: rebuilding it", "index", s.Dir,
				"identity", cmpOr(info.Identity, "none"), "corpus", s.Corpus, "want", want)
		}
	} else if s.Logger != nil {
		s.Logger.Info("indexing corpus", "corpus", s.Corpus, "index", s.Dir)
	}
	sources, err := Sources(s.Corpus)
	if err != nil {
		return nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
	}
	info, err := Build(ctx, s.Dir, sources, BuildOptions{SkipBad: s.SkipBad, Force: force, Logger: s.Logger, Command: "reactgen run (index stage of " + r.Dir.Path + ")"})
	if err != nil {
		if ctx.Err() != nil || pipeline.IsDiskFailure(err) {
			return nil, fmt.Errorf("index %s: %w", s.Dir, err) // a full or read-only disk is no config mistake
		}
		return nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
	}
	counts := pipeline.Counts{"pages": int(info.Pages), "skipped": int(info.Skipped), "duplicates": int(info.Duplicates)}
	if info.Pages == 0 {
		os.RemoveAll(s.Dir)
		return counts, &pipeline.ConfigError{Key: "corpus.path", Message: fmt.Sprintf("%s holds no pages", s.Corpus)}
	}
	if info.Identity != want {
		return counts, &pipeline.ConfigError{Key: "corpus.path", Message: fmt.Sprintf(
			"%s changed while the run started: the index built is %s, the run pinned %s; run again", s.Corpus, info.Identity, want)}
	}
	return counts, nil
}

// Identity pins the corpus of a run: the identity of the index it reads (IdentityOf),
// which is its result key, and the inputs the manifest lists (the index and every
// source file). With a corpus.path it is computed from the sources (every file is
// hashed), whether or not the index is built yet, so that an index built from other
// sources, or from an older copy of the corpus, is known as such; without one, it is
// the identity of the index in dir.
func Identity(dir, corpus string) (string, []pipeline.Input, error) {
	var files []wikidump.File
	var id string
	if corpus == "" {
		info, err := ReadInfo(dir)
		if err != nil {
			return "", nil, &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
		}
		if info.Identity == "" {
			return "", nil, &pipeline.ConfigError{Key: "corpus.index", Message: fmt.Sprintf(
				"the index %s was built by an older reactgen and records no identity; rebuild it (reactgen index --force)", dir)}
		}
		files, id = info.Sources, info.Identity
	} else {
		sources, err := Sources(corpus)
		if err != nil {
			return "", nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
		}
		for _, src := range sources {
			fs, err := wikidump.HashSource(src, wikidump.FormatAuto)
			if err != nil {
				return "", nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
			}
			files = append(files, fs...)
		}
		id = IdentityOf(files, 0)
	}
	ins := []pipeline.Input{{Role: "corpus-index", Path: dir, SHA256: id}}
	for _, f := range files {
		ins = append(ins, pipeline.Input{Role: "corpus", Path: f.Path, Bytes: f.Bytes, SHA256: f.SHA256})
	}
	return id, ins, nil
}

// OpenPinned opens the index in dir for a run that pinned identity id, refusing an index
// of another identity (one rebuilt since the run checked it).
func OpenPinned(dir, id string) (*Index, error) {
	ix, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if got := ix.Info().Identity; got != id {
		ix.Close()
		return nil, fmt.Errorf("the index %s is %s, but the run pinned %s: it was rebuilt since the run started", dir, cmpOr(got, "an index with no identity"), id)
	}
	return ix, nil
}

// Sources expands corpus.path: a file, a folder (the HotpotQA dump), or a glob such as
// wiki-pages/*.jsonl (FEVER's dump is 109 files).
func Sources(path string) ([]string, error) {
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
