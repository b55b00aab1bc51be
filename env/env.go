// Package env is the ReAct environment of the paper for HotpotQA and FEVER: Search,
// Lookup and Finish over a Corpus of pages. A Corpus (the local index, or MediaWiki) is
// shared and read-only; each episode has its own Wiki with its own page and lookup state.
//
// A Wiki answers in one of two modes (Options.Observations): paper, the official code's
// observations byte for byte (wikienv.py, wrappers.py), and rules, reactgen's own. It
// parses actions in one of two modes (Options.Actions): paper, the official
// startswith/endswith test, and lenient, which reads what small models write.
//
// It consumes a Corpus and, one Step at a time, the model's action text, and produces
// a Result per step: the parsed action, the observation, whether the episode is done
// and, after Finish, the answer (a paper observation also reports the reward against
// Options.Gold).
//
// Imports: pipeline and the internal/ libraries; the stages, env/envserver and
// cmd/reactgen import it, never the reverse.
package env

import (
	"context"
	"errors"
	"strings"
)

// ErrDone is returned by Step after the episode has ended with Finish.
var ErrDone = errors.New("env: episode is done")

// Page is one encyclopedia page: its text and that text split into sentences.
type Page struct {
	Title string
	// Sentences are the page's sentences as its source gives them (or as the project's
	// splitter cuts plain text); rules observations show them and Lookup walks them.
	Sentences []string
	// Text is the page's text with one paragraph a line, which paper observations split
	// as the paper's environment does (PaperSentences). Empty means the sentences
	// joined by single spaces, one paragraph.
	Text           string
	Disambiguation bool
}

// PageText returns p's text as paper observations read it: Text, or the sentences joined
// by single spaces when the corpus gives no text.
func PageText(p Page) string {
	if p.Text != "" {
		return p.Text
	}
	return strings.Join(p.Sentences, " ")
}

// Corpus is a searchable set of pages.
//
// Implementations are safe for concurrent use by many episodes. Page blocks on I/O and
// returns the page a Search for title finds under m (Match.Pick among the pages whose
// NormalizeTitle equals title's), or ok=false with a nil error when there is none.
// Similar returns at most k titles ranked by full-text relevance over titles and text,
// best first; an empty result means nothing matched.
type Corpus interface {
	Page(ctx context.Context, title string, m Match) (Page, bool, error)
	Similar(ctx context.Context, query string, k int) ([]string, error)
}

// Action is a parsed agent action.
type Action struct {
	Type     string // pipeline.ActionSearch, ActionLookup, ActionFinish or ActionInvalid
	Argument string
	Raw      string // the text as the agent wrote it
	// paper is the text as the paper's environment judged it (ParsePaperAction): first
	// letter lower-cased, surrounding white space stripped; empty for ParseAction.
	paper string
}

// Result is what the environment answers to one action.
type Result struct {
	Action      Action
	Observation string
	Done        bool
	Answer      string // the Finish argument (for FEVER, the canonical label when it is one)
}
