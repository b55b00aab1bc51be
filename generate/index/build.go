package index

import (
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

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/reactgen/reactgen/generate/corpus"
)

// FormatVersion is the version of the on-disk layout; Open refuses any other.
//
// Version 2 splits the index into pages.db and fts.db, built in parallel.
const FormatVersion = 2

// ErrExists is returned by Build when dir already holds something and Force is off.
var ErrExists = errors.New("index already exists (use force to rebuild)")

// Info is what an index records about itself in info.json. Sources and Fingerprint pin
// the corpus in a run manifest.
type Info struct {
	FormatVersion  int           `json:"format_version"`
	Pages          int64         `json:"pages"`
	Duplicates     int64         `json:"duplicates"`     // pages dropped: an earlier page had the same normalised title
	Skipped        int64         `json:"skipped"`        // malformed records skipped (SkipBad)
	Repaired       int64         `json:"repaired"`       // records with invalid UTF-8 replaced (SkipBad)
	Disambiguation int64         `json:"disambiguation"` // disambiguation pages
	Sentences      int64         `json:"sentences"`
	TextBytes      int64         `json:"text_bytes"` // bytes of sentence text stored
	IndexBytes     int64         `json:"index_bytes"`
	BuiltAt        time.Time     `json:"built_at"`
	BuildSeconds   float64       `json:"build_seconds"`
	Sources        []corpus.File `json:"sources"`
	// Fingerprint is the SHA-256 over the sources' hashes in order.
	Fingerprint string `json:"fingerprint"`
}

// BuildOptions tune Build.
type BuildOptions struct {
	Format  string // corpus format of every source: auto (default), jsonl, hotpotqa-wiki, hotpotqa-questions
	SkipBad bool   // skip malformed records and repair invalid UTF-8 instead of failing
	Force   bool   // replace an existing index
	// Progress, when set, is called from the build goroutine with the pages stored so far.
	Progress func(pages int)
	Logger   *slog.Logger
	// Split splits plain-text paragraphs into sentences; nil uses the project's splitter.
	Split func(text string) []string
	// FTSChars caps the text indexed for full-text search per page, at a sentence
	// boundary (the intro is what Search shows, and tokenising is most of the build's
	// cost); 0 means 500, negative means all.
	FTSChars int
	// BatchPages is how many pages go in one transaction; 0 means 50,000.
	BatchPages int
}

// Exists reports whether dir holds a built index.
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, infoFile))
	return err == nil
}

// ReadInfo reads the info.json of the index in dir.
func ReadInfo(dir string) (Info, error) {
	b, err := os.ReadFile(filepath.Join(dir, infoFile))
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
// opts.Force. Pages whose normalised title repeats an earlier one are dropped and
// counted.
func Build(ctx context.Context, dir string, sources []string, opts BuildOptions) (Info, error) {
	start := time.Now()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(sources) == 0 {
		return Info{}, errors.New("build index: no sources")
	}
	if err := checkTarget(dir, opts.Force); err != nil {
		return Info{}, err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Info{}, fmt.Errorf("build index: %w", err)
	}
	removeStale(parent, filepath.Base(dir), log)
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".building-")
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
	for _, f := range []string{pagesFile, ftsFile} {
		st, err := os.Stat(filepath.Join(tmp, f))
		if err != nil {
			return Info{}, fmt.Errorf("build index: %w", err)
		}
		info.IndexBytes += st.Size()
	}
	info.FormatVersion = FormatVersion
	info.BuiltAt = start.UTC()
	info.Fingerprint = fingerprint(info.Sources)
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

// removeStale removes what a killed earlier build of the same target left beside it
// (".<base>.building-*", and its ".old" twin). The caller holds the run directory, so
// no other build of this target can be running.
func removeStale(parent, base string, log *slog.Logger) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return // MkdirTemp reports an unusable parent
	}
	prefix := "." + base + ".building-"
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		if err := os.RemoveAll(p); err != nil {
			log.Warn("index build: remove stale build directory", "path", p, "err", err)
			continue
		}
		log.Info("index build: removed stale build directory", "path", p)
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

// replaceDir moves the finished tmp into dir, moving an old index aside first.
func replaceDir(tmp, dir string, force bool) error {
	var old string
	if _, err := os.Stat(dir); err == nil {
		if err := checkTarget(dir, force); err != nil {
			return err
		}
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("build index: move old index aside: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return fmt.Errorf("build index: %w", err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("build index: remove old index: %w", err)
		}
	}
	return nil
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

func fingerprint(files []corpus.File) string {
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
	doc  corpus.Doc
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
`

// The FTS table merges nothing during the load (automerge 0, crisismerge high) and is
// optimized into one segment at the end: incremental merging rewrote the posting lists
// several times over.
const ftsSchema = `
CREATE VIRTUAL TABLE fts USING fts5(title, body, content='', detail=full, tokenize='unicode61 remove_diacritics 2');
INSERT INTO fts(fts, rank) VALUES('rank', 'bm25(10.0, 1.0)');
INSERT INTO fts(fts, rank) VALUES('hashsize', 67108864);
INSERT INTO fts(fts, rank) VALUES('automerge', 0);
INSERT INTO fts(fts, rank) VALUES('crisismerge', 1024);
`

// openWrite opens a database file for the build: no journal, no syncs, one connection.
func openWrite(ctx context.Context, path, schema string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)&_pragma=cache_size(-131072)&_pragma=temp_store(MEMORY)&_pragma=locking_mode(EXCLUSIVE)")
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

// buildDB writes pages.db and fts.db in dir. The stages, each its own goroutine:
// produce reads the sources in order, drops duplicate titles and numbers the pages;
// row workers split, compress and cut the FTS text; dispatch puts the batches back in
// order and hands each to both writers; the pages writer and the FTS writer each own
// one database, so the two inserts run in parallel. (On one connection every
// statement savepoint also made FTS5 flush its in-memory index to a new segment.)
func buildDB(ctx context.Context, dir string, sources []string, opts BuildOptions, log *slog.Logger) (Info, error) {
	start := time.Now()
	pdb, err := openWrite(ctx, filepath.Join(dir, pagesFile), pagesSchema)
	if err != nil {
		return Info{}, err
	}
	defer pdb.Close()
	fdb, err := openWrite(ctx, filepath.Join(dir, ftsFile), ftsSchema)
	if err != nil {
		return Info{}, err
	}
	defer fdb.Close()

	workers := max(1, runtime.GOMAXPROCS(0))
	var info Info
	jobs := make(chan job, workers)
	order := make(chan chan []row, 2*workers+2)
	toPages := make(chan []row, 4)
	toFTS := make(chan []row, 4)
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
		defer close(toFTS)
		return dispatch(gctx, order, toPages, toFTS, &info)
	})
	g.Go(func() error {
		return write(gctx, pdb, opts.BatchPages, toPages, pageInserter, nil, log.With("db", pagesFile))
	})
	g.Go(func() error {
		return write(gctx, fdb, opts.BatchPages, toFTS, ftsInserter, opts.Progress, log.With("db", ftsFile))
	})
	if err := g.Wait(); err != nil {
		return Info{}, err
	}
	log.Debug("index build: pages stored", "pages", info.Pages, "seconds", time.Since(start).Seconds())

	// Finish both databases in parallel: the title key on one, the FTS merge on the other.
	g, gctx = errgroup.WithContext(ctx)
	g.Go(func() error {
		// Titles are unique already (produce dropped duplicates); building the index
		// once from sorted keys is cheaper than keeping it during the load.
		if _, err := pdb.ExecContext(gctx, `CREATE UNIQUE INDEX pages_norm ON pages(norm)`); err != nil {
			return fmt.Errorf("build index title key: %w", err)
		}
		log.Debug("index build: title key", "seconds", time.Since(start).Seconds())
		return nil
	})
	g.Go(func() error {
		// Merge the FTS segments into one b-tree: smaller on disk and faster to query.
		if _, err := fdb.ExecContext(gctx, `INSERT INTO fts(fts) VALUES('optimize')`); err != nil {
			return fmt.Errorf("build index optimize: %w", err)
		}
		log.Debug("index build: fts optimized", "seconds", time.Since(start).Seconds())
		return storeCommonTerms(gctx, fdb, info.Pages)
	})
	if err := g.Wait(); err != nil {
		return Info{}, err
	}
	if err := errors.Join(pdb.Close(), fdb.Close()); err != nil {
		return Info{}, fmt.Errorf("build index close: %w", err)
	}
	return info, nil
}

// commonFraction is the share of pages above which a term counts as common: Similar
// leaves such terms out of its text pass, where their posting lists would cost a scan
// of most of the index for no ranking signal.
const commonFraction = 0.05

// storeCommonTerms records the terms that occur in more than commonFraction of pages.
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

// produce reads the sources in order, drops pages whose normalised title was seen
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
		r, err := corpus.Open(ctx, src, opts.Format, corpus.Options{SkipBad: opts.SkipBad, Split: opts.Split})
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
			if _, dup := seen[norm]; dup {
				info.Duplicates++
				continue
			}
			seen[norm] = struct{}{}
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
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	defer enc.Close()
	for j := range jobs {
		rows := make([]row, len(j.pages))
		for i, p := range j.pages {
			rows[i] = makeRow(p, enc, ftsChars)
		}
		j.out <- rows // buffered: never blocks
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// dispatch takes the row batches in source order and hands each to both writers.
func dispatch(ctx context.Context, order <-chan chan []row, toPages, toFTS chan<- []row, info *Info) error {
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
		for _, out := range []chan<- []row{toPages, toFTS} {
			select {
			case out <- rows:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

func makeRow(p pending, enc *zstd.Encoder, ftsChars int) row {
	sents := p.doc.Sentences
	for i, s := range sents {
		if strings.Contains(s, sentenceSep) {
			sents[i] = strings.ReplaceAll(s, sentenceSep, " ")
		}
	}
	text := strings.Join(sents, sentenceSep)
	var body []byte
	if len(text) >= 256 {
		body = enc.EncodeAll([]byte(text), append(make([]byte, 0, len(text)/2+8), bodyZstd))
	} else {
		body = append([]byte{bodyRaw}, text...)
	}
	n := 0
	for i, s := range sents {
		if ftsChars >= 0 && i > 0 && n+1+len(s) > ftsChars {
			break
		}
		n += len(s)
		if i > 0 {
			n++
		}
	}
	// text joins the sentences with one separator byte, which the tokenizer reads as
	// white space, so the FTS text is a prefix of it.
	return row{
		id:        p.id,
		norm:      p.norm,
		title:     p.doc.Title,
		disamb:    p.doc.Disambiguation || isDisambiguation(p.doc.Title, sents),
		body:      body,
		fts:       text[:n],
		sentences: len(sents),
		textBytes: len(text),
	}
}

// table says how one writer inserts rows: the one-row statement, its placeholder
// group, and a row's arguments.
type table struct {
	name   string
	insert string // INSERT ... VALUES with one placeholder group
	group  string // the placeholder group, repeated for multi-row inserts
	rows   int    // rows per INSERT
	args   func(args []any, r row) []any
}

var (
	pageInserter = table{
		name:   "pages",
		insert: `INSERT INTO pages(id, norm, title, disamb, body) VALUES (?, ?, ?, ?, ?)`,
		group:  `, (?, ?, ?, ?, ?)`,
		rows:   32,
		args: func(a []any, r row) []any {
			return append(a, r.id, r.norm, r.title, r.disamb, r.body)
		},
	}
	ftsInserter = table{
		name:   "fts",
		insert: `INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)`,
		group:  `, (?, ?, ?)`,
		// One row per INSERT: a multi-row INSERT into a virtual table opens a
		// statement savepoint, and FTS5 flushes its in-memory index to a new segment
		// at every savepoint.
		rows: 1,
		args: func(a []any, r row) []any {
			return append(a, r.id, r.title, r.fts)
		},
	}
)

// write inserts the batches from in into db with t, committing every per pages
// (0 means 50,000), and calls progress, when set, with the rows written so far.
func write(ctx context.Context, db *sql.DB, per int, in <-chan []row, t table, progress func(int), log *slog.Logger) error {
	if per <= 0 {
		per = 50_000
	}
	// Cancellation is checked between batches; a context-bound transaction would be
	// rolled back by database/sql from another goroutine while a statement runs.
	outer := ctx
	ctx = context.WithoutCancel(ctx)
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("build index %s: %w", t.name, err)
	}
	defer conn.Close()
	ins := &inserter{conn: conn, t: t}
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

// inserter buffers rows and writes them t.rows at a time in one transaction.
type inserter struct {
	conn      *sql.Conn
	t         table
	tx        *sql.Tx
	one, many *sql.Stmt
	args      []any
	pending   []string // titles of buffered rows, for error messages
}

func (in *inserter) begin(ctx context.Context) error {
	var err error
	if in.tx, err = in.conn.BeginTx(ctx, nil); err != nil {
		return fmt.Errorf("build index %s: %w", in.t.name, err)
	}
	if in.one, err = in.tx.PrepareContext(ctx, in.t.insert); err != nil {
		return fmt.Errorf("build index %s: %w", in.t.name, err)
	}
	if in.t.rows <= 1 {
		in.many = in.one
		return nil
	}
	if in.many, err = in.tx.PrepareContext(ctx, in.t.insert+strings.Repeat(in.t.group, in.t.rows-1)); err != nil {
		return fmt.Errorf("build index %s: %w", in.t.name, err)
	}
	return nil
}

func (in *inserter) add(ctx context.Context, r row) error {
	in.args = in.t.args(in.args, r)
	in.pending = append(in.pending, r.title)
	if len(in.pending) < in.t.rows {
		return nil
	}
	err := in.exec(ctx, in.many, in.args, in.pending)
	in.reset()
	return err
}

func (in *inserter) reset() {
	clear(in.args) // drop references to the rows' strings and bodies
	in.args, in.pending = in.args[:0], in.pending[:0]
}

// exec inserts the rows of titles.
func (in *inserter) exec(ctx context.Context, stmt *sql.Stmt, args []any, titles []string) error {
	if _, err := stmt.ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("build index: insert %s %q to %q: %w", in.t.name, titles[0], titles[len(titles)-1], err)
	}
	return nil
}

// commit writes the rows still buffered one by one and commits.
func (in *inserter) commit(ctx context.Context) error {
	per := len(in.args) / max(1, len(in.pending))
	for i := range in.pending {
		if err := in.exec(ctx, in.one, in.args[per*i:per*i+per], in.pending[i:i+1]); err != nil {
			return err
		}
	}
	in.reset()
	if err := in.tx.Commit(); err != nil {
		return fmt.Errorf("build index %s: commit: %w", in.t.name, err)
	}
	return nil
}
