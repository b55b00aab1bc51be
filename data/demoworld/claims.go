package demoworld

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Evidence is one [annotation_id, evidence_id, page, sentence_index] entry of FEVER's
// evidence. A NOT ENOUGH INFO claim has one entry with only the annotation id.
type Evidence struct {
	AnnotationID int
	EvidenceID   int
	Page         string // title with underscores for spaces; empty for NOT ENOUGH INFO
	Sentence     int
}

// MarshalJSON writes the entry as FEVER does: a four-element array, nulls for NOT
// ENOUGH INFO.
func (e Evidence) MarshalJSON() ([]byte, error) {
	if e.Page == "" {
		return json.Marshal([]any{e.AnnotationID, nil, nil, nil})
	}
	return json.Marshal([]any{e.AnnotationID, e.EvidenceID, e.Page, e.Sentence})
}

// Claim is one FEVER claim in the dataset's official JSONL shape.
type Claim struct {
	ID         int          `json:"id"`
	Verifiable string       `json:"verifiable"`
	Label      string       `json:"label"`
	Claim      string       `json:"claim"`
	Evidence   [][]Evidence `json:"evidence"`
}

// FEVER labels.
const (
	supports = "SUPPORTS"
	refutes  = "REFUTES"
	nei      = "NOT ENOUGH INFO"
)

// claimDraft is a claim with its one piece of evidence (none for NOT ENOUGH INFO).
type claimDraft struct {
	text  string
	title string
	sent  int
}

func (g *gen) claims() ([]Claim, error) {
	labels := []string{supports, refutes, nei}
	seen := map[string]bool{}
	ids := map[int]bool{}
	fresh := func() int {
		for {
			n := g.intn(10_000, 999_999)
			if !ids[n] {
				ids[n] = true
				return n
			}
		}
	}
	var out []Claim
	for tries := 0; len(out) < g.opts.Claims; tries++ {
		if tries > 100*g.opts.Claims {
			return nil, fmt.Errorf("demo world: made only %d of %d distinct claims; enlarge the world", len(out), g.opts.Claims)
		}
		label := labels[len(out)%len(labels)]
		var d claimDraft
		switch label {
		case nei:
			d = g.claimNEI()
		default:
			d = g.claimFact(label == supports)
		}
		if d.text == "" || seen[d.text] {
			continue
		}
		seen[d.text] = true
		c := Claim{ID: fresh(), Verifiable: "VERIFIABLE", Label: label, Claim: d.text}
		if label == nei {
			c.Verifiable = "NOT VERIFIABLE"
			c.Evidence = [][]Evidence{{{AnnotationID: fresh()}}}
		} else {
			c.Evidence = [][]Evidence{{{AnnotationID: fresh(), EvidenceID: fresh(), Page: underscored(d.title), Sentence: d.sent}}}
		}
		out = append(out, c)
	}
	return out, nil
}

// shift returns a year near y but different from it.
func (g *gen) shift(y int) int {
	d := g.intn(1, 15)
	if g.rng.IntN(2) == 0 {
		d = -d
	}
	return y + d
}

// claimFact restates a fact of the world (true) or the same fact with one value changed.
func (g *gen) claimFact(true_ bool) claimDraft {
	switch g.rng.IntN(8) {
	case 0:
		p := g.anyPerson()
		c := p.birthplace
		if !true_ {
			c = g.otherPlace(c)
		}
		return claimDraft{fmt.Sprintf("%s was born in %s.", capital(personQ(p)), c.name), p.title, p.born0}
	case 1:
		p := g.anyPerson()
		y := p.born
		if !true_ {
			y = g.shift(y)
		}
		return claimDraft{fmt.Sprintf("%s was born in %d.", capital(personQ(p)), y), p.title, p.born0}
	case 2:
		c := g.anyPlace()
		r := c.river
		for !true_ && r == c.river {
			r = g.pick(g.rivers)
		}
		return claimDraft{fmt.Sprintf("%s lies on the %s River.", c.name, r), c.name, c.river0}
	case 3:
		o := g.anyOrg()
		f := o.founder
		if !true_ {
			for f.name == o.founder.name {
				f = g.anyPerson()
			}
		}
		return claimDraft{fmt.Sprintf("%s was founded by %s.", o.name, f.name), o.title, o.founded0}
	case 4:
		w := g.anyWork()
		o := w.publisher
		if !true_ {
			o = g.anyOrg()
			if o == w.publisher {
				return claimDraft{}
			}
		}
		verb := "published"
		if w.kind == "film" || w.kind == "album" {
			verb = "released"
		}
		return claimDraft{fmt.Sprintf("%s was %s by %s.", w.title, verb, o.name), w.title, w.pub0}
	case 5:
		o := g.anyOrg()
		y := o.founded
		if !true_ {
			y = g.shift(y)
		}
		return claimDraft{fmt.Sprintf("%s was founded in %d.", o.name, y), o.title, o.founded0}
	case 6:
		c := g.anyPlace()
		land := c.country
		for !true_ && land == c.country {
			land = g.pick(g.lands)
		}
		return claimDraft{fmt.Sprintf("%s is a city in %s.", c.name, land), c.name, 0}
	default:
		o := g.anyOrg()
		c := o.hq
		if !true_ {
			c = g.otherPlace(c)
		}
		return claimDraft{fmt.Sprintf("The headquarters of %s are in %s.", o.name, c.name), o.title, o.hq0}
	}
}

// claimNEI says something about an entity of the world that no page states. Every
// template starts with the entity's name, which is the claim's longest capitalised span.
func (g *gen) claimNEI() claimDraft {
	instruments := []string{"cello", "violin", "oboe", "harp", "trumpet"}
	switch g.rng.IntN(5) {
	case 0:
		p := g.anyPerson()
		if p.homonym {
			return claimDraft{}
		}
		return claimDraft{text: fmt.Sprintf("%s played the %s in a city orchestra.", p.name, g.pick(instruments))}
	case 1:
		p := g.anyPerson()
		if p.homonym {
			return claimDraft{}
		}
		return claimDraft{text: fmt.Sprintf("%s won a medal in rowing.", p.name)}
	case 2:
		c := g.anyPlace()
		return claimDraft{text: fmt.Sprintf("%s hosted a chess tournament in %d.", c.name, g.intn(1900, 2000))}
	case 3:
		o := g.anyOrg()
		return claimDraft{text: fmt.Sprintf("%s employs more than %s people.", o.name, strconv.Itoa(g.intn(2, 40))+",000")}
	default:
		w := g.anyWork()
		return claimDraft{text: fmt.Sprintf("%s was adapted into a stage musical.", w.title)}
	}
}

// capital upper-cases the first letter ("the painter X" opening a sentence).
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
