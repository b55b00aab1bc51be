// Package env is the ReAct environment of the paper for HotpotQA and FEVER: Search,
// Lookup and Finish over a Corpus of pages. A Corpus (the local index, or MediaWiki) is
// shared and read-only; each episode has its own Wiki with its own page and lookup state.
package env

import (
	"context"
	"errors"
)

// ErrDone is returned by Step after the episode has ended with Finish.
var ErrDone = errors.New("env: episode is done")

// Page is one encyclopedia page, already split into sentences.
type Page struct {
	Title          string
	Sentences      []string
	Disambiguation bool
}

// Corpus is a searchable set of pages.
//
// Implementations are safe for concurrent use by many episodes. Page blocks on I/O and
// returns ok=false with a nil error when no page's normalised title equals title (see
// NormalizeTitle). Similar returns at most k titles ranked by full-text relevance over
// titles and text, best first; an empty result means nothing matched.
type Corpus interface {
	Page(ctx context.Context, title string) (Page, bool, error)
	Similar(ctx context.Context, query string, k int) ([]string, error)
}

// Action is a parsed agent action.
type Action struct {
	Type     string // pipeline.ActionSearch, ActionLookup, ActionFinish or ActionInvalid
	Argument string
	Raw      string // the text as the agent wrote it
}

// Result is what the environment answers to one action.
type Result struct {
	Action      Action
	Observation string
	Done        bool
	Answer      string // the Finish argument (for FEVER, the canonical label when it is one)
}
