package env

import (
	"strings"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/python"
	"github.com/reactgen/reactgen/pipeline"
)

// ParseAction parses one action in the paper's syntax: Search[entity], Lookup[keyword] or
// Finish[answer]. The action name is case-insensitive (FireAct writes search[...]), space
// around the name and before '[' is tolerated, text after the matching ']' is ignored and
// a missing ']' is tolerated at the end of the text. The argument is trimmed; an empty
// argument, an unknown name or text without '[' gives Type pipeline.ActionInvalid.
func ParseAction(raw string) Action {
	a := Action{Type: pipeline.ActionInvalid, Raw: raw}
	s := strings.TrimSpace(raw)
	open := strings.IndexByte(s, '[')
	if open < 0 {
		return a
	}
	var typ string
	switch strings.ToLower(strings.TrimSpace(s[:open])) {
	case "search":
		typ = pipeline.ActionSearch
	case "lookup":
		typ = pipeline.ActionLookup
	case "finish":
		typ = pipeline.ActionFinish
	default:
		return a
	}
	arg := s[open+1:]
	depth := 0
	for i := 0; i < len(arg); i++ {
		switch arg[i] {
		case '[':
			depth++
		case ']':
			if depth == 0 {
				arg = arg[:i]
				i = len(arg)
			} else {
				depth--
			}
		}
	}
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return a
	}
	a.Type, a.Argument = typ, arg
	return a
}

// ParsePaperAction parses one action as the paper's code does (the notebooks'
// webthink() and wikienv.py's step): the first character is lower-cased (Python's
// str.lower, so "İ" becomes "i̇"), surrounding white space is stripped (str.strip), and the text is an action only when it
// starts with "search[", "lookup[" or "finish[" and ends with "]". The argument is what
// lies between, untrimmed, and may be empty ("Finish[]" finishes with an empty answer).
// So "Search[x] and more", "Search[x" and "SEARCH[x]" are invalid, and so is an action
// the model began with a line break ("\n\nFinish[x]": the lower-casing met the line
// break). "think[...]", which wikienv.py answers "Nice thought.", is invalid here: the
// paper's action space is Search, Lookup and Finish.
func ParsePaperAction(raw string) Action {
	s := raw
	if _, size := utf8.DecodeRuneInString(s); size > 0 {
		s = python.Lower(s[:size]) + s[size:]
	}
	s = python.Strip(s)
	a := Action{Type: pipeline.ActionInvalid, Raw: raw, paper: s}
	for _, k := range [...]struct{ prefix, typ string }{
		{"search[", pipeline.ActionSearch},
		{"lookup[", pipeline.ActionLookup},
		{"finish[", pipeline.ActionFinish},
	} {
		if strings.HasPrefix(s, k.prefix) && strings.HasSuffix(s, "]") {
			a.Type, a.Argument = k.typ, s[len(k.prefix):len(s)-1]
			break
		}
	}
	return a
}

// String returns the normalised form of the action, e.g. Search[Ada Lovelace]; for an
// invalid action, the raw text trimmed.
func (a Action) String() string {
	switch a.Type {
	case pipeline.ActionSearch:
		return "Search[" + a.Argument + "]"
	case pipeline.ActionLookup:
		return "Lookup[" + a.Argument + "]"
	case pipeline.ActionFinish:
		return "Finish[" + a.Argument + "]"
	}
	return strings.TrimSpace(a.Raw)
}
