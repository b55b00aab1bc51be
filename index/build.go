package index

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/reactgen/reactgen/index/wikidump"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// FormatVersion is the version of the on-disk layout; Open refuses any other.
//
// Version 2 splits the index into pages.db and FTS shards fts-N.db, built in parallel,
// and stores bodies S2-compressed. Version 3 stores each page's text with its sentences
// marked in it (see layoutBody), so that paper observations can split the text itself.
// Version 4 keeps pages whose titles differ only in letter case (one page per
// env.TitleKey, several per normalised title) and marks sentences with a byte that text
// cannot hold (0xFF, where version 3 used U+001E and replaced it in the text).
const FormatVersion = 4

// ErrExists is returned by Build when dir already holds something and Force is off.
var ErrExists = errors.New("index already exists (use force to rebuild)")

// Info is what an index records about itself in info.json. Sources and Fingerprint pin
// the corpus in a run manifest.
type Info struct {
	FormatVersion  int             `json:"format_version"`
	Pages          int64           `json:"pages"`
	Duplicates     int64           `json:"duplicates"`     // pages dropped: an earlier page had the same title (env.TitleKey)
	Skipped        int64           `json:"skipped"`        // malformed records skipped (SkipBad)
	Repaired       int64           `json:"repaired"`       // records with invalid UTF-8 replaced (SkipBad)
	Disambiguation int64           `json:"disambiguation"` // disambiguation pages
	Sentences      int64           `json:"sentences"`
	TextBytes      int64           `json:"text_bytes"` // bytes of sentence text stored
	IndexBytes     int64           `json:"index_bytes"`
	FTSShards      int             `json:"fts_shards"` // fts-0.db, fts-1.db, ...
	BuiltAt        time.Time       `json:"built_at"`
	BuildSeconds   float64         `json:"build_seconds"`
	Sources        []wikidump.File `json:"sources"`
	// Fingerprint is the SHA-256 over the sources' hashes in order.
	Fingerprint string `json:"fingerprint"`
	// FTSChars and SkipBad are the build options that change what the index holds.
	FTSChars int  `json:"fts_chars"`
	SkipBad  bool `json:"skip_bad"`
	// Identity is what the index was built from: the hash of its format version, its
	// sources (format and SHA-256, in order) and FTSChars (see IdentityOf). A run pins
	// the identity of the index it reads; an empty one (an index from before identities)
	// matches nothing.
	Identity string `json:"identity"`
}

// IdentityOf is the identity of an index built from sources with the given FTSChars
// (as BuildOptions holds it: 0 means the default): what a run compares an index
// against before reading it.
func IdentityOf(sources []wikidump.File, ftsChars int) string {
	h := sha256.New()
	fmt.Fprintf(h, "reactgen index format %d\nfts_chars %d\n", FormatVersion, resolveFTSChars(ftsChars))
	for _, f := range sources {
		fmt.Fprintf(h, "%s %s\n", f.Format, f.SHA256)
	}
	return "index:" + hex.EncodeToString(h.Sum(nil))[:32]
}

// resolveFTSChars is the FTSChars a build uses: 0 means 500, negative means all (-1).
func resolveFTSChars(n int) int {
	switch {
	case n == 0:
		return 500
	case n < 0:
		return -1
	}
	return n
}

// BuildOptions tune Build.
type BuildOptions struct {
	Format  string // corpus format of every source: auto (default), jsonl, hotpotqa-wiki, hotpotqa-questions
	SkipBad bool   // skip malformed records and repair invalid UTF-8 instead of failing
	Force   bool   // replace an existing index
	// Command is who holds the build lock, as a second build is told; empty means
	// "reactgen index".
	Command string
	// Progress, when set, is called from the build goroutine with the pages stored so far.
	Progress func(pages int)
	Logger   *slog.Logger
	// Split splits plain-text paragraphs into sentences; nil uses the project's splitter.
	Split func(text string) []string
	// FTSChars caps the text indexed for full-text search per page, at a sentence
	// boundary (the intro is what Search shows, and tokenising is most of the build's
	// cost); 0 means 500, negative means all.
	FTSChars int
	// BatchPages is how many pages go in one transaction of each database; 0 means
	// 200,000. FTS5 flushes its in-memory index at every commit, and each flush sorts
	// every term it holds, so fewer and larger flushes cost less in all.
	BatchPages int
	// FTSShards is how many full-text databases are written in parallel (each holds
	// alternate batches of pages, and Similar merges them by rank); 0 means one per
	// CPU, at most 4.
	FTSShards int
}

// Exists reports whether dir holds a built index.
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, infoFile))
	return err == nil
}

// maxInfoBytes bounds info.json (a source is about 200 bytes of it).
const maxInfoBytes = 64 << 20

// ReadInfo reads the info.json of the index in dir.
func ReadInfo(dir string) (Info, error) {
	b, err := safefile.ReadFile(filepath.Join(dir, infoFile), maxInfoBytes)
	if err != nil {
		return Info{}, fmt.Errorf("read index info: %w", err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return Info{}, fmt.Errorf("read index info %s: %w", filepath.Join(dir, infoFile), err)
	}
	return info, nil
}

// Build reads every source and writes an index to dir. It builds in a temporary
// directory beside dir and renames it into place, so a failed or killed build never
// leaves a partial index under dir. It refuses to replace an existing index unless
// opts.Force. Pages whose title repeats an earlier one (env.TitleKey: underscores and
// white space aside, the same text; letter case counts) are dropped and counted.
func Build(ctx context.Context, dir string, sources []string, opts BuildOptions) (Info, error) {
	start := time.Now()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(sources) == 0 {
		return Info{}, errors.New("build index: no sources")
	}
	parent, base := filepath.Dir(filepath.Clean(dir)), filepath.Base(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Info{}, fmt.Errorf("build index: %w", err)
	}
	// One build of dir at a time: a second is refused before it touches anything.
	lock, err := pipeline.AcquireLockFile(filepath.Join(parent, "."+base+".lock"), "index", dir, cmp.Or(opts.Command, "reactgen index"))
	if err != nil {
		return Info{}, err
	}
	defer lock.Remove()
	recoverOld(parent, base, log)
	if err := checkTarget(dir, opts.Force); err != nil {
		return Info{}, err
	}
	removeStale(parent, base, log)
	tmp, err := os.MkdirTemp(parent, "."+base+".building-")
	if err != nil {
		return Info{}, fmt.Errorf("build index: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()

	info, err := buildDB(ctx, tmp, sources, opts, log)
	if err != nil {
		return Info{}, err
	}
	files := []string{pagesFile}
	for i := range info.FTSShards {
		files = append(files, ftsFile(i))
	}
	for _, f := range files {
		st, err := os.Stat(filepath.Join(tmp, f))
		if err != nil {
			return Info{}, fmt.Errorf("build index: %w", err)
		}
		info.IndexBytes += st.Size()
	}
	info.FormatVersion = FormatVersion
	info.BuiltAt = start.UTC()
	info.Fingerprint = fingerprint(info.Sources)
	info.FTSChars = resolveFTSChars(opts.FTSChars)
	info.SkipBad = opts.SkipBad
	info.Identity = IdentityOf(info.Sources, opts.FTSChars)
	info.BuildSeconds = time.Since(start).Seconds()
	if err := writeInfo(filepath.Join(tmp, infoFile), info); err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	if err := replaceDir(tmp, dir, opts.Force); err != nil {
		return Info{}, err
	}
	done = true
	log.Info("index built", "dir", dir, "pages", info.Pages, "duplicates", info.Duplicates,
		"skipped", info.Skipped, "seconds", info.BuildSeconds, "bytes", info.IndexBytes)
	return info, nil
}

func writeInfo(path string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write index info: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func fingerprint(files []wikidump.File) string {
	h := sha256.New()
	for _, f := range files {
		io.WriteString(h, f.SHA256)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
