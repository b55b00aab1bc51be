// Package react reads what models really write when prompted for ReAct, Act, CoT and
// Standard answers. It consumes a raw completion (text, as the server returned it) and
// produces the thought and the normalised action of one step (Step), the action of a
// re-ask reply (ActionOnly), or a final answer (Answer). It is tolerant by design: it
// accepts numbered and unnumbered labels in any case, FireAct's lower-case actions, a
// missing Thought label, several actions, and a model that goes on to write its own
// Observation; it never fails, it reports what it found.
package react

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/pipeline"
)

// Parsed is one step read from a completion.
type Parsed struct {
	Thought string
	// Action is the normalised action (Search[x], Lookup[x], Finish[x]); for an action
	// with an unknown name or no argument, the text as written.
	Action     string
	ActionType string // pipeline.ActionSearch, ActionLookup, ActionFinish or ActionInvalid
	Argument   string
	HasAction  bool // an action was written (labelled, or a bare Name[...] line)
	Cut        bool // the model wrote its own Observation; the text from there was dropped
	Extra      bool // more than one action was written; the first was kept
}

// Valid reports whether the step holds an action the environment accepts.
func (p Parsed) Valid() bool { return p.HasAction && p.ActionType != pipeline.ActionInvalid }

var (
	obsRe        = regexp.MustCompile(`(?i)(?:^|\n|\])[ \t]*observation[ \t]*\d*[ \t]*:`)
	actLineRe    = regexp.MustCompile(`(?im)^[ \t]*action[ \t]*\d*[ \t]*:[ \t]*`)
	actInlineRe  = regexp.MustCompile(`(?i)(?:^|[\s.])action[ \t]*\d*[ \t]*:[ \t]*`)
	bareActRe    = regexp.MustCompile(`(?im)^[ \t]*(?:search|lookup|finish)[ \t]*\[`)
	actNameRe    = regexp.MustCompile(`(?i)\b(?:search|lookup|finish)[ \t]*\[`)
	thoughtRe    = regexp.MustCompile(`(?i)^\s*thought[ \t]*\d*[ \t]*:`)
	finishRe     = regexp.MustCompile(`(?i)finish[ \t]*\[`)
	answerLineRe = regexp.MustCompile(`(?im)^[ \t]*(?:final[ \t]+)?answer[ \t]*:[ \t]*(.*)$`)
	answerIsRe   = regexp.MustCompile(`(?i)\banswer[ \t]+is[ \t]*:?[ \t]*`)
)

// mayHold reports whether s may hold word (lower-case ASCII) in any case. It is a cheap
// test that lets Step skip a regexp that cannot match: those regexps scan the whole
// completion at every position. Any non-ASCII text may hold it, since (?i) folds some
// non-ASCII letters onto ASCII ones (ſ onto s, the Kelvin sign onto k).
func mayHold(s, word string) bool { return firstHold(s, word) >= 0 }

// firstHold is where s may first hold word (lower-case ASCII) in any case: the first
// place it does, 0 for text with any non-ASCII byte (which may hold it anywhere, see
// mayHold), or -1 when s cannot hold it.
func firstHold(s, word string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return 0
		}
	}
	for i := 0; i+len(word) <= len(s); i++ {
		if lower(s[i]) == word[0] && asciiEqualFold(s[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

// asciiEqualFold compares ASCII s with lower-case word, ignoring s's case.
func asciiEqualFold(s, word string) bool {
	for i := range len(word) {
		if lower(s[i]) != word[i] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// findIndex is re.FindStringIndex(s), skipped when s cannot hold word.
func findIndex(re *regexp.Regexp, s, word string) []int {
	if !mayHold(s, word) {
		return nil
	}
	return re.FindStringIndex(s)
}

// findAll is re.FindAllStringIndex(s, n), skipped when s cannot hold word.
func findAll(re *regexp.Regexp, s string, n int, word string) [][]int {
	if !mayHold(s, word) {
		return nil
	}
	return re.FindAllStringIndex(s, n)
}

// findAllLines is findAll for a regexp whose every match starts at a line start ((?m)^)
// and holds word with no newline before it: no match starts before the line where s may
// first hold word, so the scan starts there (a ReAct step's action is its last line;
// scanning the thought before it was most of Step's time).
func findAllLines(re *regexp.Regexp, s string, n int, word string) [][]int {
	at := firstHold(s, word)
	if at < 0 {
		return nil
	}
	from := strings.LastIndexByte(s[:at], '\n') + 1
	locs := re.FindAllStringIndex(s[from:], n)
	for _, loc := range locs {
		loc[0], loc[1] = loc[0]+from, loc[1]+from
	}
	return locs
}

// normalizeNewlines turns Windows and old Mac line ends into \n.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// Step parses the completion of step (1-based) of a ReAct or Act episode. The label
// numbers are not checked against step, since models miscount; step is accepted so that
// the prompt layout that produced the completion stays visible at the call site. A
// completion with no action gives HasAction false and the whole text as the thought.
func Step(completion string, step int) Parsed {
	_ = step
	s := normalizeNewlines(completion)
	var p Parsed
	if loc := findIndex(obsRe, s, "observation"); loc != nil {
		end := loc[0]
		if s[loc[0]] == ']' {
			end++
		}
		s, p.Cut = s[:end], true
	}
	start, body := -1, -1 // where the action (label) starts, where its text starts
	if locs := findAllLines(actLineRe, s, -1, "action"); len(locs) > 0 {
		start, body, p.Extra = locs[0][0], locs[0][1], len(locs) > 1
	} else if locs := findAll(actInlineRe, s, -1, "action"); len(locs) > 0 {
		start, body, p.Extra = locs[0][0], locs[0][1], len(locs) > 1
	} else if locs := findAllLines(bareActRe, s, -1, "["); len(locs) > 0 {
		start, body, p.Extra = locs[0][0], locs[0][0], len(locs) > 1
	}
	if start < 0 {
		p.Thought = cleanThought(s)
		return p
	}
	p.Thought = cleanThought(s[:start])
	line := firstLine(s[body:])
	if line == "" {
		return p
	}
	p.HasAction = true
	// Each match holds its own bracket, so a line with one bracket has one action at most.
	if strings.Count(line, "[") > 1 && len(actNameRe.FindAllStringIndex(line, 3)) > 1 {
		p.Extra = true // "search[a], search[b]" on one line
	}
	a := env.ParseAction(line)
	p.Action, p.ActionType, p.Argument = a.String(), a.Type, a.Argument
	return p
}

// cleanThought drops a leading Thought label and surrounding space.
func cleanThought(s string) string {
	if loc := thoughtRe.FindStringIndex(s); loc != nil {
		s = s[loc[1]:]
	}
	return strings.TrimSpace(s)
}

// firstLine returns the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}

// ActionOnly reads the reply to a re-ask for an action ("Action 3: Search[x]", or just
// "search[x]"), returning the normalised action and whether it is a valid one.
func ActionOnly(completion string) (action string, ok bool) {
	p := Step(completion, 0)
	if !p.HasAction {
		a := env.ParseAction(firstLine(normalizeNewlines(completion)))
		return a.String(), a.Type != pipeline.ActionInvalid
	}
	return p.Action, p.Valid()
}

// Answer reads the final answer of a CoT or Standard output. It looks, in order, for
// the last Finish[X], the last "Answer: X" line, and the last "the answer is X" (with or
// without a colon), and trims the sentence's closing full stop and enclosing quotes.
func Answer(text string) (answer string, ok bool) {
	s := normalizeNewlines(text)
	if locs := finishRe.FindAllStringIndex(s, -1); len(locs) > 0 {
		if a := env.ParseAction(firstLine(s[locs[len(locs)-1][0]:])); a.Type == pipeline.ActionFinish {
			return a.Argument, true
		}
	}
	if ms := answerLineRe.FindAllStringSubmatch(s, -1); len(ms) > 0 {
		if a := cleanAnswer(ms[len(ms)-1][1]); a != "" {
			return a, true
		}
	}
	if locs := answerIsRe.FindAllStringIndex(s, -1); len(locs) > 0 {
		if a := cleanAnswer(firstLine(s[locs[len(locs)-1][1]:])); a != "" {
			return a, true
		}
	}
	return "", false
}

// cleanAnswer ends the answer at the end of its sentence: the first ". " after a word of
// three or more letters without inner dots (so "St. Louis" and "U.S. Navy" survive).
func cleanAnswer(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '.' || s[i+1] != ' ' {
			continue
		}
		word := s[strings.LastIndexByte(s[:i], ' ')+1 : i]
		if len(word) >= 3 && !strings.Contains(word, ".") {
			s = s[:i]
			break
		}
	}
	s = strings.TrimSuffix(s, ".")
	s = strings.TrimSpace(s)
	for _, q := range [][2]string{{`"`, `"`}, {"“", "”"}, {"'", "'"}, {"**", "**"}} {
		if len(s) >= len(q[0])+len(q[1]) && strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) {
			s = strings.TrimSpace(s[len(q[0]) : len(s)-len(q[1])])
		}
	}
	return s
}
