package mediawiki

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envtest"
)

// fakeWiki answers the two queries the client makes in MediaWiki's JSON shape
// (formatversion=2): it folds titles the way MediaWiki does (underscores, first letter),
// follows redirects, marks disambiguation pages in pageprops and searches with the
// in-memory corpus's ranking.
type fakeWiki struct {
	t         *testing.T
	pages     map[string]env.Page
	redirects map[string]string
	search    env.Corpus
	requests  atomic.Int64

	mu       sync.Mutex
	failures []int // statuses to answer before serving normally
	agents   map[string]bool
}

func newFake(t *testing.T, pages []env.Page, redirects map[string]string) (*fakeWiki, *httptest.Server) {
	t.Helper()
	f := &fakeWiki{t: t, pages: map[string]env.Page{}, redirects: redirects, search: envtest.NewMemory(pages), agents: map[string]bool{}}
	for _, p := range pages {
		f.pages[p.Title] = p
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// failNext makes the next requests answer these statuses, in order.
func (f *fakeWiki) failNext(statuses ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, statuses...)
}

// mwTitle folds a title as MediaWiki does: underscores to spaces, first letter upper.
func mwTitle(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "_", " "))
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[size:]
}

func (f *fakeWiki) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	f.mu.Lock()
	f.agents[r.UserAgent()] = true
	var fail int
	if len(f.failures) > 0 {
		fail, f.failures = f.failures[0], f.failures[1:]
	}
	f.mu.Unlock()
	if fail != 0 {
		if fail == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		http.Error(w, "try later", fail)
		return
	}
	q := r.URL.Query()
	if q.Get("action") != "query" || q.Get("format") != "json" || q.Get("formatversion") != "2" {
		writeJSON(w, map[string]any{"error": map[string]string{"code": "badparams", "info": "unsupported request " + r.URL.RawQuery}})
		return
	}
	switch {
	case q.Get("list") == "search":
		limit, _ := strconv.Atoi(q.Get("srlimit"))
		titles, _ := f.search.Similar(r.Context(), q.Get("srsearch"), limit)
		hits := []map[string]any{}
		for _, t := range titles {
			hits = append(hits, map[string]any{"ns": 0, "title": t})
		}
		writeJSON(w, map[string]any{"batchcomplete": true, "query": map[string]any{"searchinfo": map[string]int{"totalhits": len(hits)}, "search": hits}})
	case q.Get("prop") == "extracts|pageprops":
		if q.Get("explaintext") != "1" || q.Get("exintro") != "1" || q.Get("redirects") != "1" {
			f.t.Errorf("page query without explaintext, exintro or redirects: %s", r.URL.RawQuery)
		}
		asked := q.Get("titles")
		title := mwTitle(asked)
		query := map[string]any{}
		if title != asked {
			query["normalized"] = []map[string]any{{"fromencoded": false, "from": asked, "to": title}}
		}
		if to, ok := f.redirects[title]; ok {
			query["redirects"] = []map[string]any{{"from": title, "to": to}}
			title = to
		}
		p, ok := f.pages[title]
		if !ok {
			query["pages"] = []map[string]any{{"ns": 0, "title": title, "missing": true}}
		} else {
			page := map[string]any{"pageid": len(title), "ns": 0, "title": p.Title, "extract": env.PageText(p)}
			if p.Disambiguation {
				page["pageprops"] = map[string]string{"disambiguation": ""}
			}
			query["pages"] = []map[string]any{page}
		}
		writeJSON(w, map[string]any{"batchcomplete": true, "query": query})
	default:
		writeJSON(w, map[string]any{"error": map[string]string{"code": "badparams", "info": "unsupported query"}})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}
