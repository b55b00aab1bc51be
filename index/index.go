// Package index is the local encyclopedia behind the ReAct environment: Build reads
// corpus sources (package wikidump) and writes on-disk SQLite databases (pure-Go
// modernc.org/sqlite): pages.db, a table of pages keyed by normalised title, and the
// shards fts-0.db, fts-1.db, ..., FTS5 full-text indexes over titles and intro text,
// each holding alternate batches of pages so that they are written in parallel. Open
// serves them read-only as an env.Corpus (Page for titles, Similar for
// bm25-ranked suggestions merged over the shards). The index directory also holds
// info.json, which records the SHA-256 of every source file and the index's identity
// (IdentityOf: its sources and build options). Builds of one directory are serialised
// by a lock beside it and replace an old index atomically. Stage is the index stage of a
// run (a pipeline.Stage that builds the index when it is missing or was built from
// other sources), and Identity pins a run's corpus for resume. CheckConfig, IdentityFor,
// StageFor and OpenFor are a config's local backend (env.backend: local) as the command
// line's registry hands it to generate and serve-env.
//
// Imports: pipeline, env (for the title rules) and index/wikidump; never another stage.
package index

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/s2"
	"github.com/reactgen/reactgen/env"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

const (
	pagesFile = "pages.db"
	infoFile  = "info.json"
	// sentenceSep marks where each sentence of a page's stored text begins and ends: a
	// byte that UTF-8 text never holds (the corpus readers pass only valid UTF-8, and
	// Build replaces what is not), so every character of a page's text, U+001E and the
	// other separators included, is kept as the text of the page.
	sentenceSep = "\xff"
	// bodyRaw and bodyS2 are the first byte of a stored body (1 was zstd, format 1).
	bodyRaw = 0
	bodyS2  = 2
)

// Index is an open, read-only index. It is safe for concurrent use by many goroutines:
// they share pools of read-only SQLite connections, one per database.
type Index struct {
	pages  *sql.DB
	info   Info
	page   *sql.Stmt // pages: a page by normalised title
	titles *sql.Stmt // pages: titles by id, for Similar
	shards []ftsShard
	common map[string]bool // terms in more than commonFraction of a shard's pages
}

// ftsShard is one FTS database of the index.
type ftsShard struct {
	db *sql.DB
	// text and title give the best rowids and their bm25 ranks for a MATCH on fts
	// (title and intro) and on titles (the title alone).
	text, title *sql.Stmt
}

var _ env.Corpus = (*Index)(nil)

// Open opens the index in dir read-only. A rebuild that swaps a new index into dir
// while Open runs cannot leave it with databases of two builds: Open reads info.json
// again once every database is open, and starts over when it changed.
func Open(dir string) (*Index, error) {
	for range 3 {
		ix, err := open(dir)
		if err != nil {
			return nil, err
		}
		if again, err := ReadInfo(dir); err == nil && again.BuiltAt.Equal(ix.info.BuiltAt) && again.Identity == ix.info.Identity {
			return ix, nil
		}
		ix.Close()
	}
	return nil, fmt.Errorf("open index %s: it was replaced three times while being opened", dir)
}

func open(dir string) (*Index, error) {
	info, err := ReadInfo(dir)
	if err != nil {
		return nil, err
	}
	if info.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("open index %s: format version %d, this build reads only %d (it would find other pages and sentences): "+
			"rebuild it with reactgen index --force, or let reactgen run rebuild it from corpus.path", dir, info.FormatVersion, FormatVersion)
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	ix := &Index{info: info}
	fail := func(err error) (*Index, error) {
		ix.Close()
		return nil, fmt.Errorf("open index %s: %w", dir, err)
	}
	if ix.pages, err = openRead(filepath.Join(dir, pagesFile), n); err != nil {
		return fail(err)
	}
	if ix.page, err = ix.pages.Prepare(`SELECT title, disamb, body FROM pages WHERE norm = ? ORDER BY id`); err != nil {
		return fail(err)
	}
	if ix.titles, err = ix.pages.Prepare(`SELECT id, title FROM pages WHERE id IN (SELECT value FROM json_each(?))`); err != nil {
		return fail(err)
	}
	if info.FTSShards < 1 {
		return fail(fmt.Errorf("info.json: fts_shards %d", info.FTSShards))
	}
	ix.common = map[string]bool{}
	for i := range info.FTSShards {
		var sh ftsShard
		sh.db, err = openRead(filepath.Join(dir, ftsFile(i)), n)
		if err != nil {
			return fail(err)
		}
		ix.shards = append(ix.shards, sh)
		// FTS5 answers ORDER BY rank LIMIT k from its own sorter.
		if ix.shards[i].text, err = sh.db.Prepare(`SELECT rowid, rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?`); err != nil {
			return fail(err)
		}
		if ix.shards[i].title, err = sh.db.Prepare(`SELECT rowid, rank FROM titles WHERE titles MATCH ? ORDER BY rank LIMIT ?`); err != nil {
			return fail(err)
		}
		if err := loadCommon(sh.db, ix.common); err != nil {
			return fail(err)
		}
	}
	return ix, nil
}

// openRead opens one database of the index read-only with a pool of n connections.
func openRead(path string, n int) (*sql.DB, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	// immutable: the file never changes after Build, so readers skip locking entirely.
	// mmap_size asks for the whole file (SQLite clamps it to its compile-time limit):
	// pages.db passes 1 GB at a million pages, and reads beyond the map cost a pread.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1&_pragma=query_only(1)&_pragma=mmap_size(68719476736)&_pragma=cache_size(-16384)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	return db, nil
}

// loadCommon adds the common terms of one shard to m.
func loadCommon(db *sql.DB, m map[string]bool) error {
	rows, err := db.Query(`SELECT term FROM common`)
	if err != nil {
		return fmt.Errorf("common terms: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return fmt.Errorf("common terms: %w", err)
		}
		m[t] = true
	}
	return rows.Err()
}

// Close releases the database. It is safe to call more than once.
func (ix *Index) Close() error {
	var errs []error
	for _, s := range []*sql.Stmt{ix.page, ix.titles} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	ix.page, ix.titles = nil, nil
	for _, sh := range ix.shards {
		for _, st := range []*sql.Stmt{sh.text, sh.title} {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		errs = append(errs, sh.db.Close())
	}
	ix.shards = nil
	if ix.pages != nil {
		errs = append(errs, ix.pages.Close())
		ix.pages = nil
	}
	return errors.Join(errs...)
}

// Info describes the index as Build wrote it.
func (ix *Index) Info() Info { return ix.info }

// Page returns the page a Search for title finds under m: m.Pick among the pages whose
// normalised title (NormalizeTitle) equals title's, in the order Build stored them. ok is
// false with a nil error when there is none.
func (ix *Index) Page(ctx context.Context, title string, m env.Match) (env.Page, bool, error) {
	norm := NormalizeTitle(title)
	if norm == "" {
		return env.Page{}, false, nil
	}
	rows, err := ix.page.QueryContext(ctx, norm)
	if err != nil {
		return env.Page{}, false, fmt.Errorf("index page %q: %w", norm, err)
	}
	defer rows.Close()
	type stored struct {
		title  string
		disamb bool
		body   []byte
	}
	var found []stored
	for rows.Next() {
		var p stored
		if err := rows.Scan(&p.title, &p.disamb, &p.body); err != nil {
			return env.Page{}, false, fmt.Errorf("index page %q: %w", norm, err)
		}
		found = append(found, p)
	}
	if err := rows.Err(); err != nil {
		return env.Page{}, false, fmt.Errorf("index page %q: %w", norm, err)
	}
	titles := make([]string, len(found))
	for i, p := range found {
		titles[i] = p.title
	}
	i, ok := m.Pick(title, titles)
	if !ok {
		return env.Page{}, false, nil
	}
	text, err := ix.decodeBody(found[i].body)
	if err != nil {
		return env.Page{}, false, fmt.Errorf("index page %q: %w", found[i].title, err)
	}
	sents, text, err := readBody(text)
	if err != nil {
		return env.Page{}, false, fmt.Errorf("index page %q: %w", found[i].title, err)
	}
	return env.Page{Title: found[i].title, Sentences: sents, Text: text, Disambiguation: found[i].disamb}, true, nil
}

func (ix *Index) decodeBody(b []byte) (string, error) {
	if len(b) == 0 {
		return "", nil
	}
	switch b[0] {
	case bodyRaw:
		return string(b[1:]), nil
	case bodyS2:
		out, err := s2.Decode(nil, b[1:])
		if err != nil {
			return "", fmt.Errorf("decompress: %w", err)
		}
		return string(out), nil
	}
	return "", fmt.Errorf("unknown body encoding %d", b[0])
}

// Similar returns up to k titles ranked by bm25 relevance, best first. Titles that match
// the query's words come before pages that only mention them in their text (titles
// weigh more). Query text is reduced to plain words, so no input can produce an FTS
// syntax error; the words are ORed, so partial matches still rank.
func (ix *Index) Similar(ctx context.Context, query string, k int) ([]string, error) {
	if k <= 0 {
		return nil, nil
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	// Title postings are short, so the title pass is cheap even for common words; the
	// text pass only runs to fill what the titles could not.
	out, err := ix.match(ctx, matchExpr(terms), true, k, nil)
	if err != nil {
		return nil, err
	}
	if len(out) >= k {
		return out, nil
	}
	return ix.match(ctx, matchExpr(ix.rare(terms)), false, k, out)
}

// rare is terms without those in a large share of pages (they cost a scan of most of
// the index and rank nothing), or terms itself when nothing else is left.
func (ix *Index) rare(terms []string) []string {
	var rare []string
	for _, t := range terms {
		if !ix.common[t] {
			rare = append(rare, t)
		}
	}
	if len(rare) == 0 {
		return terms
	}
	return rare
}

// match appends to have the titles of the best rows for expr (on the titles table, or
// on titles and intro text) that are not yet in it, until it holds k.
func (ix *Index) match(ctx context.Context, expr string, titlesOnly bool, k int, have []string) ([]string, error) {
	ids, err := ix.matchIDs(ctx, expr, titlesOnly, k+len(have))
	if err != nil || len(ids) == 0 {
		return have, err
	}
	titles, err := ix.titlesOf(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("index similar %q: %w", expr, err)
	}
	seen := make(map[string]bool, len(have))
	for _, t := range have {
		seen[t] = true
	}
	out := have
	for _, id := range ids {
		if len(out) >= k {
			break
		}
		t, ok := titles[id]
		if ok && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// Hit is one page Retrieve found.
type Hit struct {
	Title string
	// Score is the page's bm25 relevance, higher is better (FTS5's rank negated, as
	// BM25 retrievers report scores).
	Score float64
}

// Retrieve returns up to k pages ranked by bm25 relevance of their title and intro
// text to query, best first, with their scores: the passage retrieval of a search
// engine, where Similar serves the environment's suggestions. The query is reduced to
// plain words as in Similar; terms in a large share of pages are left out unless
// nothing else is left. An empty result means nothing matched.
func (ix *Index) Retrieve(ctx context.Context, query string, k int) ([]Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	hits, err := ix.matchHits(ctx, matchExpr(ix.rare(terms)), false, k)
	if err != nil || len(hits) == 0 {
		return nil, err
	}
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	titles, err := ix.titlesOf(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("index retrieve %q: %w", query, err)
	}
	out := make([]Hit, 0, len(hits))
	for _, h := range hits {
		if t, ok := titles[h.id]; ok {
			out = append(out, Hit{Title: t, Score: -h.rank})
		}
	}
	return out, nil
}

// rankedRow is one FTS row and its bm25 rank (lower is better).
type rankedRow struct {
	id   int64
	rank float64
}

// matchIDs returns the rowids of the n best rows for expr over all shards, best first.
func (ix *Index) matchIDs(ctx context.Context, expr string, titlesOnly bool, n int) ([]int64, error) {
	hits, err := ix.matchHits(ctx, expr, titlesOnly, n)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	return ids, nil
}

// matchHits returns the n best rows for expr over all shards, best first. The shards
// hold alternate batches of pages, so their bm25 statistics agree closely enough to
// merge by rank.
func (ix *Index) matchHits(ctx context.Context, expr string, titlesOnly bool, n int) ([]rankedRow, error) {
	type hit = rankedRow
	var hits []hit
	for _, sh := range ix.shards {
		stmt := sh.text
		if titlesOnly {
			stmt = sh.title
		}
		rows, err := stmt.QueryContext(ctx, expr, n)
		if err != nil {
			return nil, fmt.Errorf("index similar %q: %w", expr, err)
		}
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.id, &h.rank); err != nil {
				rows.Close()
				return nil, fmt.Errorf("index similar %q: %w", expr, err)
			}
			hits = append(hits, h)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("index similar %q: %w", expr, err)
		}
	}
	// Lower bm25 rank is better; ties go to the earlier page.
	slices.SortFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return hits[:min(n, len(hits))], nil
}

// titlesOf looks up the titles of ids in one query.
func (ix *Index) titlesOf(ctx context.Context, ids []int64) (map[int64]string, error) {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	rows, err := ix.titles.QueryContext(ctx, b.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]string, len(ids))
	for rows.Next() {
		var id int64
		var t string
		if err := rows.Scan(&id, &t); err != nil {
			return nil, err
		}
		out[id] = t
	}
	return out, rows.Err()
}
