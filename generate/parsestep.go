package generate

import (
	"regexp"
	"strings"
)

// This file is a minimal stand-in for package generate/parse (parse.Step and
// parse.Answer), used until that package lands; the integrator can switch the two calls.

// parsed is one completion read as a step.
type parsed struct {
	Thought   string
	Action    string
	HasAction bool
	Cut       bool // the completion went on to write an observation of its own
}

var (
	reObservation = regexp.MustCompile(`(?i)\n?\s*observation\s*\d*\s*:`)
	reActionLabel = regexp.MustCompile(`(?i)(?:^|\n)\s*action\s*\d*\s*:`)
	reThought     = regexp.MustCompile(`(?i)^\s*thought\s*\d*\s*:\s*`)
	reBracket     = regexp.MustCompile(`(?i)\b(search|lookup|finish)\s*\[[^\n]*?\]`)
	reAnswer      = regexp.MustCompile(`(?i)(?:^|\n|\s)(?:answer\s*:|so the answer is)\s*([^\n]*)`)
	reFinishAns   = regexp.MustCompile(`(?i)\bfinish\s*\[([^\]\n]*)\]`)
)

// parseStep reads one completion of a ReAct or Act step: an optional "Thought i:" label,
// the thought, then "Action i: X". A completion that writes its own observation is cut
// there; when several actions appear, the first counts.
func parseStep(completion string) parsed {
	var p parsed
	text := completion
	if loc := reObservation.FindStringIndex(text); loc != nil {
		text, p.Cut = text[:loc[0]], true
	}
	if loc := reActionLabel.FindStringIndex(text); loc != nil {
		p.Thought = text[:loc[0]]
		rest := strings.TrimSpace(text[loc[1]:])
		if line, _, _ := strings.Cut(rest, "\n"); strings.TrimSpace(line) != "" {
			p.Action, p.HasAction = strings.TrimSpace(line), true
		}
	} else if loc := reBracket.FindStringIndex(text); loc != nil {
		p.Thought = text[:loc[0]]
		p.Action, p.HasAction = text[loc[0]:loc[1]], true
	} else {
		p.Thought = text
	}
	p.Thought = strings.TrimSpace(reThought.ReplaceAllString(strings.TrimSpace(p.Thought), ""))
	return p
}

// parseAnswer reads the answer of a CoT or Standard completion: "Answer: X", "Finish[X]"
// or "So the answer is X".
func parseAnswer(text string) (string, bool) {
	if m := reFinishAns.FindStringSubmatch(text); m != nil && strings.TrimSpace(m[1]) != "" {
		return strings.TrimSpace(m[1]), true
	}
	if ms := reAnswer.FindAllStringSubmatch(text, -1); ms != nil {
		a := strings.TrimSpace(ms[len(ms)-1][1])
		a = strings.TrimSpace(strings.TrimSuffix(a, "."))
		if a != "" {
			return a, true
		}
	}
	return "", false
}
