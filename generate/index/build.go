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
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/reactgen/reactgen/generate/corpus"
)

// FormatVersion is the version of the on-disk layout; Open refuses any other.
const FormatVersion = 1

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

	info, err := buildDB(ctx, filepath.Join(tmp, dbFile), sources, opts, log)
	if err != nil {
		return Info{}, err
	}
	st, err := os.Stat(filepath.Join(tmp, dbFile))
	if err != nil {
		return Info{}, fmt.Errorf("build index: %w", err)
	}
	info.IndexBytes = st.Size()
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
	norm, title string
	disamb      bool
	body        []byte
	fts         string
	sentences   int
	textBytes   int
}

const schema = `
CREATE TABLE pages (
	id     INTEGER PRIMARY KEY,
	norm   TEXT NOT NULL UNIQUE,
	title  TEXT NOT NULL,
	disamb INTEGER NOT NULL,
	body   BLOB NOT NULL
);
CREATE VIRTUAL TABLE fts USING fts5(title, body, content='', detail=full, tokenize='unicode61 remove_diacritics 2');
INSERT INTO fts(fts, rank) VALUES('rank', 'bm25(10.0, 1.0)');
INSERT INTO fts(fts, rank) VALUES('hashsize', 33554432);
`

// buildDB writes the database at path: one goroutine reads and prepares rows, this one
// inserts them.
func buildDB(ctx context.Context, path string, sources []string, opts BuildOptions, log *slog.Logger) (Info, error) {
	start := time.Now()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)&_pragma=cache_size(-262144)&_pragma=temp_store(MEMORY)&_pragma=locking_mode(EXCLUSIVE)")
	if err != nil {
		return Info{}, fmt.Errorf("build index: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `PRAGMA page_size=8192`); err != nil {
		return Info{}, fmt.Errorf("build index: %w", err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return Info{}, fmt.Errorf("build index schema: %w", err)
	}

	var info Info
	batches := make(chan []row, 4)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(batches)
		return produce(gctx, sources, opts, batches, &info)
	})
	g.Go(func() error {
		return consume(gctx, db, opts, batches, &info, log)
	})
	if err := g.Wait(); err != nil {
		return Info{}, err
	}
	log.Debug("index build: pages stored", "pages", info.Pages, "seconds", time.Since(start).Seconds())
	// Merge FTS segments into one b-tree: smaller on disk and faster to query.
	if _, err := db.ExecContext(ctx, `INSERT INTO fts(fts) VALUES('optimize')`); err != nil {
		return Info{}, fmt.Errorf("build index optimize: %w", err)
	}
	log.Debug("index build: fts optimized", "seconds", time.Since(start).Seconds())
	if err := storeCommonTerms(ctx, db, info.Pages); err != nil {
		return Info{}, err
	}
	log.Debug("index build: common terms stored", "seconds", time.Since(start).Seconds())
	if err := db.Close(); err != nil {
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

// produce reads the sources in order and sends batches of rows. It owns info.Sources,
// Skipped and Repaired; consume owns the rest.
func produce(ctx context.Context, sources []string, opts BuildOptions, out chan<- []row, info *Info) error {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	defer enc.Close()
	ftsChars := opts.FTSChars
	if ftsChars == 0 {
		ftsChars = 500
	}
	const batchRows = 512
	batch := make([]row, 0, batchRows)
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		select {
		case out <- batch:
		case <-ctx.Done():
			return ctx.Err()
		}
		batch = make([]row, 0, batchRows)
		return nil
	}
	var skipped, repaired int64
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
			batch = append(batch, makeRow(doc, enc, ftsChars))
			if len(batch) == batchRows {
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

func makeRow(doc corpus.Doc, enc *zstd.Encoder, ftsChars int) row {
	sents := doc.Sentences
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
	var fts strings.Builder
	for _, s := range sents {
		if ftsChars >= 0 && fts.Len() > 0 && fts.Len()+len(s) > ftsChars {
			break
		}
		if fts.Len() > 0 {
			fts.WriteByte(' ')
		}
		fts.WriteString(s)
	}
	return row{
		norm:      NormalizeTitle(doc.Title),
		title:     doc.Title,
		disamb:    doc.Disambiguation || isDisambiguation(doc.Title, sents),
		body:      body,
		fts:       fts.String(),
		sentences: len(sents),
		textBytes: len(text),
	}
}

// consume inserts batches, committing every opts.BatchPages pages. A page whose
// normalised title was seen before is dropped here (the first wins), so rows can go in
// multi-row INSERTs: per-statement overhead is a quarter of the FTS insert cost.
func consume(ctx context.Context, db *sql.DB, opts BuildOptions, in <-chan []row, info *Info, log *slog.Logger) error {
	per := opts.BatchPages
	if per <= 0 {
		per = 50_000
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
	if err := ins.begin(ctx); err != nil {
		return err
	}
	defer func() { ins.tx.Rollback() }()
	seen := map[string]struct{}{}
	var id, inTx int64
	for batch := range in {
		if err := outer.Err(); err != nil {
			return err
		}
		for _, r := range batch {
			if r.norm == "" {
				info.Skipped++
				continue
			}
			if _, dup := seen[r.norm]; dup {
				info.Duplicates++
				continue
			}
			seen[r.norm] = struct{}{}
			id++
			if err := ins.add(ctx, id, r); err != nil {
				return err
			}
			info.Pages++
			info.Sentences += int64(r.sentences)
			info.TextBytes += int64(r.textBytes)
			if r.disamb {
				info.Disambiguation++
			}
			inTx++
			if inTx >= int64(per) {
				if err := ins.commit(ctx); err != nil {
					return err
				}
				if err := ins.begin(ctx); err != nil {
					return err
				}
				inTx = 0
				log.Debug("index build progress", "pages", info.Pages)
			}
		}
		if opts.Progress != nil {
			opts.Progress(int(info.Pages))
		}
	}
	if err := outer.Err(); err != nil {
		return err
	}
	return ins.commit(ctx)
}

// rowsPerInsert is how many rows one multi-row INSERT carries.
const rowsPerInsert = 32

// inserter buffers rows and writes them rowsPerInsert at a time in one transaction.
type inserter struct {
	conn              *sql.Conn
	tx                *sql.Tx
	page1, pageN      *sql.Stmt
	fts1, ftsN        *sql.Stmt
	pageArgs, ftsArgs []any
	pending           []string // titles of buffered rows, for error messages
}

const (
	insertPage = `INSERT INTO pages(id, norm, title, disamb, body) VALUES (?, ?, ?, ?, ?)`
	insertFTS  = `INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)`
)

func (in *inserter) begin(ctx context.Context) error {
	var err error
	if in.tx, err = in.conn.BeginTx(ctx, nil); err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	for _, p := range []struct {
		stmt **sql.Stmt
		q    string
	}{
		{&in.page1, insertPage},
		{&in.pageN, insertPage + strings.Repeat(", (?, ?, ?, ?, ?)", rowsPerInsert-1)},
		{&in.fts1, insertFTS},
		{&in.ftsN, insertFTS + strings.Repeat(", (?, ?, ?)", rowsPerInsert-1)},
	} {
		if *p.stmt, err = in.tx.PrepareContext(ctx, p.q); err != nil {
			return fmt.Errorf("build index: %w", err)
		}
	}
	return nil
}

func (in *inserter) add(ctx context.Context, id int64, r row) error {
	in.pageArgs = append(in.pageArgs, id, r.norm, r.title, r.disamb, r.body)
	in.ftsArgs = append(in.ftsArgs, id, r.title, r.fts)
	in.pending = append(in.pending, r.title)
	if len(in.pending) < rowsPerInsert {
		return nil
	}
	err := exec(ctx, in.pageN, in.ftsN, in.pageArgs, in.ftsArgs, in.pending)
	in.reset()
	return err
}

func (in *inserter) reset() {
	in.pageArgs, in.ftsArgs, in.pending = in.pageArgs[:0], in.ftsArgs[:0], in.pending[:0]
}

// exec inserts the rows of titles into both tables.
func exec(ctx context.Context, page, fts *sql.Stmt, pageArgs, ftsArgs []any, titles []string) error {
	if _, err := page.ExecContext(ctx, pageArgs...); err != nil {
		return fmt.Errorf("build index: insert pages %q to %q: %w", titles[0], titles[len(titles)-1], err)
	}
	if _, err := fts.ExecContext(ctx, ftsArgs...); err != nil {
		return fmt.Errorf("build index: insert fts %q to %q: %w", titles[0], titles[len(titles)-1], err)
	}
	return nil
}

// commit writes the rows still buffered one by one and commits.
func (in *inserter) commit(ctx context.Context) error {
	for i := range in.pending {
		if err := exec(ctx, in.page1, in.fts1, in.pageArgs[5*i:5*i+5], in.ftsArgs[3*i:3*i+3], in.pending[i:i+1]); err != nil {
			return err
		}
	}
	in.reset()
	if err := in.tx.Commit(); err != nil {
		return fmt.Errorf("build index: commit: %w", err)
	}
	return nil
}
