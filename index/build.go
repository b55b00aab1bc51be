package index

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/compress/s2"
	"golang.org/x/sync/errgroup"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index/wikidump"
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
	b, err := pipeline.ReadInputFile(filepath.Join(dir, infoFile), maxInfoBytes)
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

// The names a build uses beside its target <parent>/<base>: ".<base>.lock" (held while
// it builds), ".<base>.building-*" (the index being written) and ".<base>.old-*" (the
// index it replaces, between two renames where the file system cannot swap them).

// removeStale removes what killed earlier builds of the same target left beside it: their
// half-written ".<base>.building-*" folders, and an old index moved aside once the
// target holds an index again. The caller holds the build lock.
func removeStale(parent, base string, log *slog.Logger) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return // MkdirTemp reports an unusable parent
	}
	haveIndex := Exists(filepath.Join(parent, base))
	for _, e := range entries {
		name := e.Name()
		stale := strings.HasPrefix(name, "."+base+".building-") || haveIndex && strings.HasPrefix(name, "."+base+".old-")
		if !stale {
			continue
		}
		p := filepath.Join(parent, name)
		if err := os.RemoveAll(p); err != nil {
			log.Warn("index build: remove stale build directory", "path", p, "err", err)
			continue
		}
		log.Info("index build: removed stale build directory", "path", p)
	}
}

// Recover puts back an index that a build of dir killed between its two renames had
// moved aside (see replaceDir), so that readers find it. It does nothing while another
// build holds the lock: that build recovers it.
func Recover(dir string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	parent, base := filepath.Dir(filepath.Clean(dir)), filepath.Base(filepath.Clean(dir))
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	if olds, _ := filepath.Glob(filepath.Join(parent, "."+base+".old-*")); len(olds) == 0 {
		return nil
	}
	lock, err := pipeline.AcquireLockFile(filepath.Join(parent, "."+base+".lock"), "index", dir, "reactgen (recovering the index)")
	var le *pipeline.LockedError
	if errors.As(err, &le) {
		return nil
	}
	if err != nil {
		return err
	}
	defer lock.Remove()
	recoverOld(parent, base, log)
	return nil
}

// recoverOld puts back an index that a build killed between its two renames had moved
// aside (".<base>.old-*") when nothing took its place. The caller holds the build lock.
func recoverOld(parent, base string, log *slog.Logger) {
	dir := filepath.Join(parent, base)
	if _, err := os.Lstat(dir); err == nil {
		return
	}
	olds, _ := filepath.Glob(filepath.Join(parent, "."+base+".old-*"))
	for _, old := range olds {
		if !Exists(old) {
			continue
		}
		if err := os.Rename(old, dir); err != nil {
			log.Warn("index build: restore the index a killed build moved aside", "path", old, "err", err)
			return
		}
		log.Info("index build: restored the index a killed build had moved aside", "from", old, "to", dir)
		return
	}
}

// checkTarget refuses a dir that holds anything unless force, and even with force
// refuses one that holds something other than an index.
func checkTarget(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("build index %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if !Exists(dir) {
		return fmt.Errorf("build index %s: directory is not empty and holds no index", dir)
	}
	if !force {
		return fmt.Errorf("build index %s: %w", dir, ErrExists)
	}
	return nil
}

// replaceDir moves the finished tmp into dir. An existing index is swapped with the new
// one in one atomic exchange where the file system supports it, so dir always holds a
// whole index, and processes that have the old one open read on from it; elsewhere
// the old index is renamed aside first and, if a kill comes between the two renames,
// put back by the next build (recoverOld).
func replaceDir(tmp, dir string, force bool) error {
	if _, err := os.Lstat(dir); err != nil {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("build index: %w", err)
		}
		return nil
	}
	if err := checkTarget(dir, force); err != nil {
		return err
	}
	switch err := exchangeDirs(tmp, dir); {
	case err == nil:
		// tmp now holds the old index.
		if err := os.RemoveAll(tmp); err != nil {
			return fmt.Errorf("build index: remove old index: %w", err)
		}
		return nil
	case !errors.Is(err, errNoExchange):
		return fmt.Errorf("build index: replace %s: %w", dir, err)
	}
	parent, base := filepath.Split(dir)
	old, err := os.MkdirTemp(parent, "."+base+".old-")
	if err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	if err := os.Remove(old); err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("build index: move old index aside: %w", err)
	}
	afterMoveAside()
	if err := os.Rename(tmp, dir); err != nil {
		os.Rename(old, dir)
		return fmt.Errorf("build index: %w", err)
	}
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("build index: remove old index: %w", err)
	}
	return nil
}

// afterMoveAside is called between the two renames of replaceDir's fallback; tests
// stop a build there.
var afterMoveAside = func() {}

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

// row is one page ready to insert.
type row struct {
	id          int64
	norm, title string
	disamb      bool
	body        []byte
	fts         string
	sentences   int
	textBytes   int
}

// pending is a page that survived deduplication and waits to become a row.
type pending struct {
	id   int64
	norm string
	doc  wikidump.Doc
}

// job is one batch of pages for a row worker; the worker sends the rows on out.
type job struct {
	pages []pending
	out   chan []row
}

const pagesSchema = `
CREATE TABLE pages (
	id     INTEGER PRIMARY KEY,
	norm   TEXT NOT NULL,
	title  TEXT NOT NULL,
	disamb INTEGER NOT NULL,
	body   BLOB NOT NULL
);
-- Kept during the load, by the pages writer, which has time to spare: created after
-- it, the index cost a serial scan of every body (12 s at a million pages). Not unique:
-- titles that differ only in case share a normalised title.
CREATE INDEX pages_norm ON pages(norm);
`

// The FTS table merges nothing during the load (automerge 0, crisismerge high) and is
// optimized into one segment at the end: incremental merging rewrote the posting lists
// several times over. FTS5 flushes its hash at a commit or when it outgrows hashsize;
// each flush sorts every term the hash holds, so a large hash (128 MB, against 32 MB
// before) and long transactions make fewer and cheaper flushes in all.
const ftsSchema = `
CREATE VIRTUAL TABLE fts USING fts5(title, body, content='', detail=full, tokenize='unicode61 remove_diacritics 2');
INSERT INTO fts(fts, rank) VALUES('rank', 'bm25(10.0, 1.0)');
INSERT INTO fts(fts, rank) VALUES('hashsize', 134217728);
INSERT INTO fts(fts, rank) VALUES('automerge', 0);
INSERT INTO fts(fts, rank) VALUES('crisismerge', 1024);
-- The titles alone, for Similar's title pass: on fts a column filter reads the whole
-- doclist of the term, body occurrences too.
CREATE VIRTUAL TABLE titles USING fts5(title, content='', detail=full, tokenize='unicode61 remove_diacritics 2');
INSERT INTO titles(titles, rank) VALUES('automerge', 0);
INSERT INTO titles(titles, rank) VALUES('crisismerge', 1024);
`

// openWrite opens a database file for the build: no journal, no syncs, one connection,
// a page cache of cacheMB.
func openWrite(ctx context.Context, path, schema string, cacheMB int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", fmt.Sprintf("file:%s?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)&_pragma=cache_size(-%d)&_pragma=temp_store(MEMORY)&_pragma=locking_mode(EXCLUSIVE)", path, cacheMB<<10))
	if err != nil {
		return nil, fmt.Errorf("build index %s: %w", filepath.Base(path), err)
	}
	db.SetMaxOpenConns(1)
	// page_size takes effect only before the first table is created.
	if _, err := db.ExecContext(ctx, `PRAGMA page_size=8192`); err != nil {
		db.Close()
		return nil, fmt.Errorf("build index %s: %w", filepath.Base(path), err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("build index %s schema: %w", filepath.Base(path), err)
	}
	return db, nil
}

// ftsShards is how many FTS databases Build writes in parallel: FTS5 tokenising and
// hashing is most of the build's work, and one database has one writer.
func ftsShards(opts BuildOptions) int {
	if opts.FTSShards > 0 {
		return opts.FTSShards
	}
	return max(1, min(4, runtime.GOMAXPROCS(0)))
}

// ftsFile names FTS shard i.
func ftsFile(i int) string { return fmt.Sprintf("fts-%d.db", i) }

// buildDB writes pages.db and the FTS shards in dir and returns the shard count. The
// stages, each its own goroutine: produce reads the sources in order, drops duplicate
// titles and numbers the pages; row workers split, compress and cut the FTS text;
// dispatch puts the batches back in order and hands each to the pages writer and to
// one FTS writer in turn; every writer owns one database, so the inserts run in
// parallel. (On one connection every statement savepoint also made FTS5 flush its
// in-memory index to a new segment.)
func buildDB(ctx context.Context, dir string, sources []string, opts BuildOptions, log *slog.Logger) (Info, error) {
	start := time.Now()
	pdb, err := openWrite(ctx, filepath.Join(dir, pagesFile), pagesSchema, 128)
	if err != nil {
		return Info{}, err
	}
	defer pdb.Close()
	shards := make([]*sql.DB, ftsShards(opts))
	for i := range shards {
		if shards[i], err = openWrite(ctx, filepath.Join(dir, ftsFile(i)), ftsSchema, 32); err != nil {
			return Info{}, err
		}
		defer shards[i].Close()
	}

	workers := max(1, runtime.GOMAXPROCS(0))
	info := Info{FTSShards: len(shards)}
	jobs := make(chan job, workers)
	// Deep queues (a few MB of rows): the writers' pace is uneven (a commit flushes
	// the FTS hash) and dispatch hands batches out in order, so a writer's pause should
	// not stop the other stages at once.
	order := make(chan chan []row, 16)
	toPages := make(chan []row, 16)
	toFTS := make([]chan []row, len(shards))
	for i := range toFTS {
		toFTS[i] = make(chan []row, 8)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		defer close(order)
		return produce(gctx, sources, opts, jobs, order, &info)
	})
	ftsChars := opts.FTSChars
	if ftsChars == 0 {
		ftsChars = 500
	}
	for range workers {
		g.Go(func() error { return rowWorker(gctx, jobs, ftsChars) })
	}
	g.Go(func() error {
		defer close(toPages)
		defer func() {
			for _, c := range toFTS {
				close(c)
			}
		}()
		return dispatch(gctx, order, toPages, toFTS, &info)
	})
	g.Go(func() error {
		return write(gctx, pdb, opts.BatchPages, toPages, pageTables, opts.Progress, log.With("db", pagesFile))
	})
	for i, db := range shards {
		g.Go(func() error {
			return write(gctx, db, opts.BatchPages, toFTS[i], ftsTables, nil, log.With("db", ftsFile(i)))
		})
	}
	if err := g.Wait(); err != nil {
		return Info{}, err
	}
	log.Debug("index build: pages stored", "pages", info.Pages, "seconds", time.Since(start).Seconds())

	// Merge the FTS shards in parallel.
	g, gctx = errgroup.WithContext(ctx)
	for i, db := range shards {
		g.Go(func() error {
			// Merge the segments into one b-tree: smaller on disk and faster to query.
			for _, q := range []string{`INSERT INTO fts(fts) VALUES('optimize')`, `INSERT INTO titles(titles) VALUES('optimize')`} {
				if _, err := db.ExecContext(gctx, q); err != nil {
					return fmt.Errorf("build index %s optimize: %w", ftsFile(i), err)
				}
			}
			log.Debug("index build: fts optimized", "shard", i, "seconds", time.Since(start).Seconds())
			if err := storeCommonTerms(gctx, db, info.Pages/int64(len(shards))); err != nil {
				return fmt.Errorf("build index %s: %w", ftsFile(i), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Info{}, err
	}
	errs := []error{pdb.Close()}
	for _, db := range shards {
		errs = append(errs, db.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return Info{}, fmt.Errorf("build index close: %w", err)
	}
	return info, nil
}

// commonFraction is the share of pages above which a term counts as common: Similar
// leaves such terms out of its text pass, where their posting lists would cost a scan
// of most of the index for no ranking signal.
const commonFraction = 0.05

// storeCommonTerms records the terms that occur in more than commonFraction of the
// pages of one shard (the shards hold alternate batches, so their statistics agree).
func storeCommonTerms(ctx context.Context, db *sql.DB, pages int64) error {
	stmts := []string{
		`CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, fts, 'row')`,
		`CREATE TABLE common (term TEXT PRIMARY KEY) WITHOUT ROWID`,
		fmt.Sprintf(`INSERT INTO common SELECT term FROM temp.vocab WHERE doc > %d`, max(int64(float64(pages)*commonFraction), 20)),
		`DROP TABLE temp.vocab`,
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("build index common terms: %w", err)
		}
	}
	return nil
}

// jobPages is how many pages one row worker job carries.
const jobPages = 512

// produce reads the sources in order, drops pages whose title (env.TitleKey) was seen
// before (the first wins), numbers the rest and sends them in jobs; each job's result
// channel goes on order in the same sequence. It owns info.Sources, Skipped, Repaired
// and Duplicates; dispatch owns the rest.
func produce(ctx context.Context, sources []string, opts BuildOptions, jobs chan<- job, order chan<- chan []row, info *Info) error {
	batch := make([]pending, 0, jobPages)
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		j := job{pages: batch, out: make(chan []row, 1)}
		select {
		case jobs <- j:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case order <- j.out:
		case <-ctx.Done():
			return ctx.Err()
		}
		batch = make([]pending, 0, jobPages)
		return nil
	}
	seen := map[string]struct{}{}
	var id, skipped, repaired int64
	for _, src := range sources {
		r, err := wikidump.Open(ctx, src, opts.Format, wikidump.Options{SkipBad: opts.SkipBad, Split: opts.Split})
		if err != nil {
			return fmt.Errorf("build index: %w", err)
		}
		for {
			doc, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return fmt.Errorf("build index: %w", err)
			}
			norm := NormalizeTitle(doc.Title)
			if norm == "" {
				skipped++
				continue
			}
			key := env.TitleKey(doc.Title)
			if _, dup := seen[key]; dup {
				info.Duplicates++
				continue
			}
			seen[key] = struct{}{}
			id++
			batch = append(batch, pending{id: id, norm: norm, doc: doc})
			if len(batch) == jobPages {
				if err := send(); err != nil {
					r.Close()
					return err
				}
			}
		}
		st := r.Stats()
		skipped += int64(st.Skipped)
		repaired += int64(st.Repaired)
		info.Sources = append(info.Sources, r.Files()...)
		if err := r.Close(); err != nil {
			return fmt.Errorf("build index: close %s: %w", src, err)
		}
	}
	info.Skipped, info.Repaired = skipped, repaired
	return send()
}

// rowWorker turns jobs into rows until jobs is closed.
func rowWorker(ctx context.Context, jobs <-chan job, ftsChars int) error {
	for j := range jobs {
		rows := make([]row, len(j.pages))
		for i, p := range j.pages {
			rows[i] = makeRow(p, ftsChars)
		}
		j.out <- rows // buffered: never blocks
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// dispatch takes the row batches in source order and hands each to the pages writer
// and to the FTS shards in turn, so every shard sees ascending rowids (FTS5 flushes its
// in-memory index when a rowid goes backwards).
func dispatch(ctx context.Context, order <-chan chan []row, toPages chan<- []row, toFTS []chan []row, info *Info) error {
	n := 0
	for res := range order {
		var rows []row
		select {
		case rows = <-res:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, r := range rows {
			info.Pages++
			info.Sentences += int64(r.sentences)
			info.TextBytes += int64(r.textBytes)
			if r.disamb {
				info.Disambiguation++
			}
		}
		for _, out := range []chan<- []row{toPages, toFTS[n%len(toFTS)]} {
			select {
			case out <- rows:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		n++
	}
	return nil
}

func makeRow(p pending, ftsChars int) row {
	sents := p.doc.Sentences
	for i, s := range sents {
		sents[i] = validText(s)
	}
	stored := layoutBody(validText(p.doc.Text), sents)
	var body []byte
	if len(stored) >= 256 {
		// S2 (Snappy's successor) rather than zstd: about 1 µs a page against zstd's
		// 14 µs at its fastest level, for bodies about a third larger.
		buf := make([]byte, 1+s2.MaxEncodedLen(len(stored)))
		buf[0] = bodyS2
		body = buf[:1+len(s2.Encode(buf[1:], []byte(stored)))]
	} else {
		body = append([]byte{bodyRaw}, stored...)
	}
	// The FTS text is the body up to the end of the last sentence that fits in ftsChars
	// (counted as the sentences joined by single spaces): the tokenizer reads the
	// separators as white space, and the text between sentences is white space too.
	end, chars := 0, 0
	for i, s := range sents {
		if ftsChars >= 0 && i > 0 && chars+1+len(s) > ftsChars {
			break
		}
		chars += len(s) + min(i, 1)
		open := end + strings.Index(stored[end:], sentenceSep) // end is past the previous sentence's closing mark
		end = open + 1 + len(s) + 1
	}
	fts := strings.ReplaceAll(stored[:max(end-1, 0)], sentenceSep, " ") // without the last closing mark
	return row{
		id:        p.id,
		norm:      p.norm,
		title:     p.doc.Title,
		disamb:    p.doc.Disambiguation || isDisambiguation(p.doc.Title, sents),
		body:      body,
		fts:       fts,
		sentences: len(sents),
		textBytes: len(stored) - 2*len(sents),
	}
}

// validText is s with any byte that is not UTF-8 replaced by U+FFFD, so that no text
// holds sentenceSep. The corpus readers pass only valid UTF-8 (a record that is not is
// refused or, with SkipBad, repaired and counted); this is the index's own guarantee.
func validText(s string) string {
	if strings.Contains(s, sentenceSep) {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// layoutBody lays a page out for storage: its text with sentenceSep before and after
// each sentence, so that the separators split it into the text between sentences and
// the sentences in turn (even and odd pieces), and removing them gives the text back.
// Sentences are found in the text in order; when text is empty or a sentence is not
// there (a source whose sentences are not cut from its text), the text is taken to be
// the sentences joined by single spaces.
func layoutBody(text string, sents []string) string {
	var b strings.Builder
	b.Grow(len(text) + 2*len(sents))
	if text != "" {
		at := 0
		for _, s := range sents {
			i := strings.Index(text[at:], s)
			if i < 0 {
				b.Reset()
				text = ""
				break
			}
			b.WriteString(text[at : at+i])
			b.WriteString(sentenceSep)
			b.WriteString(s)
			b.WriteString(sentenceSep)
			at += i + len(s)
		}
		if text != "" {
			b.WriteString(text[at:])
			return b.String()
		}
	}
	for i, s := range sents {
		if i > 0 && s != "" {
			b.WriteByte(' ')
		}
		b.WriteString(sentenceSep)
		b.WriteString(s)
		b.WriteString(sentenceSep)
	}
	return b.String()
}

// readBody splits a stored body back into the page's sentences and text.
func readBody(body string) (sents []string, text string, err error) {
	if body == "" {
		return nil, "", nil
	}
	pieces := strings.Split(body, sentenceSep)
	if len(pieces)%2 != 1 {
		return nil, "", fmt.Errorf("body holds %d sentence marks, want an even number", len(pieces)-1)
	}
	for i := 1; i < len(pieces); i += 2 {
		sents = append(sents, pieces[i])
	}
	return sents, strings.Join(pieces, ""), nil
}

// table says how a writer inserts a row into one table: the one-row statement, its
// placeholder group, how many rows go in one INSERT, and a row's arguments.
type table struct {
	name   string
	insert string // INSERT ... VALUES with one placeholder group
	group  string // the placeholder group, repeated for multi-row inserts
	rows   int    // rows per INSERT
	args   func(args []any, r row) []any
}

var (
	pageTables = []table{{
		name:   "pages",
		insert: `INSERT INTO pages(id, norm, title, disamb, body) VALUES (?, ?, ?, ?, ?)`,
		group:  `, (?, ?, ?, ?, ?)`,
		rows:   32,
		args: func(a []any, r row) []any {
			return append(a, r.id, r.norm, r.title, r.disamb, r.body)
		},
	}}
	// One row per INSERT into a virtual table: a multi-row INSERT opens a statement
	// savepoint, and FTS5 flushes its in-memory index to a new segment at every
	// savepoint.
	ftsTables = []table{{
		name:   "fts",
		insert: `INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)`,
		rows:   1,
		args: func(a []any, r row) []any {
			return append(a, r.id, r.title, r.fts)
		},
	}, {
		name:   "titles",
		insert: `INSERT INTO titles(rowid, title) VALUES (?, ?)`,
		rows:   1,
		args: func(a []any, r row) []any {
			return append(a, r.id, r.title)
		},
	}}
)

// write inserts the batches from in into db's tables, committing every per pages
// (0 means 200,000), and calls progress, when set, with the rows written so far.
func write(ctx context.Context, db *sql.DB, per int, in <-chan []row, tables []table, progress func(int), log *slog.Logger) error {
	if per <= 0 {
		per = 200_000
	}
	// Cancellation is checked between batches; a context-bound transaction would be
	// rolled back by database/sql from another goroutine while a statement runs.
	outer := ctx
	ctx = context.WithoutCancel(ctx)
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	defer conn.Close()
	ins := &inserter{conn: conn}
	for _, t := range tables {
		ins.tables = append(ins.tables, tableInserter{t: t})
	}
	if err := ins.begin(ctx); err != nil {
		return err
	}
	defer func() { ins.tx.Rollback() }()
	var written, inTx int
	for batch := range in {
		if err := outer.Err(); err != nil {
			return err
		}
		for _, r := range batch {
			if err := ins.add(ctx, r); err != nil {
				return err
			}
			written++
			inTx++
			if inTx >= per {
				if err := ins.commit(ctx); err != nil {
					return err
				}
				if err := ins.begin(ctx); err != nil {
					return err
				}
				inTx = 0
				log.Debug("index build progress", "pages", written)
			}
		}
		if progress != nil {
			progress(written)
		}
	}
	if err := outer.Err(); err != nil {
		return err
	}
	return ins.commit(ctx)
}

// inserter buffers rows and writes them into its tables, each t.rows at a time, in one
// transaction.
type inserter struct {
	conn    *sql.Conn
	tx      *sql.Tx
	tables  []tableInserter
	pending []string // titles of buffered rows, for error messages
}

type tableInserter struct {
	t         table
	one, many *sql.Stmt
	args      []any
}

func (in *inserter) begin(ctx context.Context) error {
	var err error
	if in.tx, err = in.conn.BeginTx(ctx, nil); err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	for i := range in.tables {
		ti := &in.tables[i]
		if ti.one, err = in.tx.PrepareContext(ctx, ti.t.insert); err != nil {
			return fmt.Errorf("build index %s: %w", ti.t.name, err)
		}
		ti.many = ti.one
		if ti.t.rows > 1 {
			if ti.many, err = in.tx.PrepareContext(ctx, ti.t.insert+strings.Repeat(ti.t.group, ti.t.rows-1)); err != nil {
				return fmt.Errorf("build index %s: %w", ti.t.name, err)
			}
		}
	}
	return nil
}

// add buffers r and writes each table's buffered rows once it holds t.rows of them.
func (in *inserter) add(ctx context.Context, r row) error {
	in.pending = append(in.pending, r.title)
	full := true
	for i := range in.tables {
		ti := &in.tables[i]
		ti.args = ti.t.args(ti.args, r)
		full = full && len(in.pending) >= ti.t.rows
	}
	if !full {
		return nil
	}
	// Every table's rows count divides the largest, so all tables are due together.
	for i := range in.tables {
		ti := &in.tables[i]
		if err := ti.exec(ctx, ti.many, ti.args, in.pending); err != nil {
			return err
		}
	}
	in.reset()
	return nil
}

func (in *inserter) reset() {
	for i := range in.tables {
		clear(in.tables[i].args) // drop references to the rows' strings and bodies
		in.tables[i].args = in.tables[i].args[:0]
	}
	in.pending = in.pending[:0]
}

// exec inserts the rows of titles.
func (ti *tableInserter) exec(ctx context.Context, stmt *sql.Stmt, args []any, titles []string) error {
	if _, err := stmt.ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("build index: insert %s %q to %q: %w", ti.t.name, titles[0], titles[len(titles)-1], err)
	}
	return nil
}

// commit writes the rows still buffered one by one and commits.
func (in *inserter) commit(ctx context.Context) error {
	for i := range in.tables {
		ti := &in.tables[i]
		per := len(ti.args) / max(1, len(in.pending))
		for j := range in.pending {
			if err := ti.exec(ctx, ti.one, ti.args[per*j:per*j+per], in.pending[j:j+1]); err != nil {
				return err
			}
		}
	}
	in.reset()
	if err := in.tx.Commit(); err != nil {
		return fmt.Errorf("build index: commit: %w", err)
	}
	return nil
}

// errNoExchange is exchange's answer on a file system that cannot swap two directories.
var errNoExchange = errors.New("atomic exchange not supported")

// exchangeDirs is exchange; tests replace it to take the two-rename path.
var exchangeDirs = exchange
