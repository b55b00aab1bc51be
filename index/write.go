package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

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

	if err := optimize(ctx, shards, info.Pages, start, log); err != nil {
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

// optimize merges each FTS shard's segments into one b-tree (smaller on disk and faster
// to query) and stores its common terms, the shards in parallel. pages is the index's
// page count; start is when the build began, for the log.
func optimize(ctx context.Context, shards []*sql.DB, pages int64, start time.Time, log *slog.Logger) error {
	g, gctx := errgroup.WithContext(ctx)
	for i, db := range shards {
		g.Go(func() error {
			for _, q := range []string{`INSERT INTO fts(fts) VALUES('optimize')`, `INSERT INTO titles(titles) VALUES('optimize')`} {
				if _, err := db.ExecContext(gctx, q); err != nil {
					return fmt.Errorf("build index %s optimize: %w", ftsFile(i), err)
				}
			}
			log.Debug("index build: fts optimized", "shard", i, "seconds", time.Since(start).Seconds())
			if err := storeCommonTerms(gctx, db, pages/int64(len(shards))); err != nil {
				return fmt.Errorf("build index %s: %w", ftsFile(i), err)
			}
			return nil
		})
	}
	return g.Wait()
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
