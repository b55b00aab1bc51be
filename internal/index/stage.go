package index

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/reactgen/reactgen/pipeline"
)

// Stage is the index stage of a run: it builds the local index of the corpus when the
// index is missing or was built in another format version (an index this build cannot
// read is rebuilt from corpus.path), and pins it in the manifest (the corpus result key
// and inputs).
type Stage struct {
	Corpus  string // corpus.path: a file, a folder or a glob (Sources)
	Dir     string // the index directory
	SkipBad bool   // skip malformed records and count them
	Logger  *slog.Logger
}

var (
	_ pipeline.Stage    = Stage{}
	_ pipeline.Optional = Stage{}
)

// Name implements pipeline.Stage.
func (Stage) Name() string { return pipeline.StageIndex }

// Needed implements pipeline.Optional: an index that exists in this build's format is
// not built again.
func (s Stage) Needed(*pipeline.Run) bool { return !readable(s.Dir) }

// readable reports whether dir holds an index in this build's format version.
func readable(dir string) bool {
	info, err := ReadInfo(dir)
	return err == nil && info.FormatVersion == FormatVersion
}

// Run implements pipeline.Stage. A corpus that cannot be indexed is bad input, like a
// malformed task file: the error is a *pipeline.ConfigError naming corpus.path.
func (s Stage) Run(ctx context.Context, r *pipeline.Run) (pipeline.Counts, error) {
	if s.Logger != nil {
		s.Logger.Info("indexing corpus", "corpus", s.Corpus, "index", s.Dir)
	}
	sources, err := Sources(s.Corpus)
	if err != nil {
		return nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
	}
	stale := Exists(s.Dir)
	if stale && s.Logger != nil {
		s.Logger.Warn("rebuilding an index of another format version", "index", s.Dir, "format_version", FormatVersion)
	}
	info, err := Build(ctx, s.Dir, sources, BuildOptions{SkipBad: s.SkipBad, Logger: s.Logger, Force: stale})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
	}
	if info.Pages == 0 {
		os.RemoveAll(s.Dir)
		return nil, &pipeline.ConfigError{Key: "corpus.path", Message: fmt.Sprintf("%s holds no pages", s.Corpus)}
	}
	// Pin the index now that it exists.
	id, ins := identity(s.Dir, info)
	r.Manifest.Results["corpus"] = id
	kept := r.Manifest.Inputs[:0:0]
	for _, in := range r.Manifest.Inputs {
		if in.Role != "corpus" && in.Role != "corpus-index" {
			kept = append(kept, in)
		}
	}
	r.Manifest.Inputs = append(kept, ins...)
	return pipeline.Counts{"pages": int(info.Pages), "skipped": int(info.Skipped), "duplicates": int(info.Duplicates)}, nil
}

// Identity pins the corpus of a run for resume: the hash of its source file, whether or
// not the index is built yet, so that a run started before its index existed resumes
// once it does; for an index of several sources (the HotpotQA bz2 tree), the index
// fingerprint. It returns the corpus result key and the inputs the manifest lists.
func Identity(dir, corpus string) (string, []pipeline.Input, error) {
	if Exists(dir) {
		info, err := ReadInfo(dir)
		if err != nil {
			return "", nil, &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
		}
		id, ins := identity(dir, info)
		// A corpus file that changed since the index was built is a changed input.
		if st, err := os.Stat(corpus); err == nil && st.Mode().IsRegular() {
			if in, err := pipeline.DescribeInput("corpus", corpus); err == nil {
				id = "source:" + in.SHA256
			}
		}
		return id, ins, nil
	}
	in, err := pipeline.DescribeInput("corpus", corpus)
	if err != nil {
		// A directory (the HotpotQA bz2 tree) is pinned once its index is built.
		return "source:" + corpus, nil, nil
	}
	return "source:" + in.SHA256, []pipeline.Input{in}, nil
}

// identity is the corpus identity and inputs of a built index (see Identity).
func identity(dir string, info Info) (string, []pipeline.Input) {
	ins := []pipeline.Input{{Role: "corpus-index", Path: dir, SHA256: info.Fingerprint}}
	for _, s := range info.Sources {
		ins = append(ins, pipeline.Input{Role: "corpus", Path: s.Path, Bytes: s.Bytes, SHA256: s.SHA256})
	}
	if len(info.Sources) == 1 {
		return "source:" + info.Sources[0].SHA256, ins
	}
	return info.Fingerprint, ins
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
