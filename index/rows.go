package index

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/s2"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index/wikidump"
)

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
