package demoworld

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SupportingFact is one [title, sentence_index] pair of HotpotQA's supporting_facts.
type SupportingFact struct {
	Title    string
	Sentence int
}

// MarshalJSON writes the fact as HotpotQA does: a two-element array.
func (f SupportingFact) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{f.Title, f.Sentence})
}

// Paragraph is one [title, [sentences...]] entry of HotpotQA's context.
type Paragraph struct {
	Title     string
	Sentences []string
}

// MarshalJSON writes the paragraph as HotpotQA does: a two-element array.
func (p Paragraph) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{p.Title, p.Sentences})
}

// Question is one HotpotQA question in the dataset's official JSON shape.
type Question struct {
	ID              string           `json:"_id"`
	Question        string           `json:"question"`
	Answer          string           `json:"answer"`
	Type            string           `json:"type"`  // bridge or comparison
	Level           string           `json:"level"` // easy, medium or hard
	SupportingFacts []SupportingFact `json:"supporting_facts"`
	Context         []Paragraph      `json:"context"`
}

// distractors is how many non-gold pages join the gold pages in a question's context.
const distractors = 2

// draft is a question before ids, levels and context are attached.
type draft struct {
	q, a, typ string
	facts     []SupportingFact
	hard      int // facts past the fifth sentence, and homonyms, each make it harder
}

func (g *gen) questions() ([]Question, error) {
	makers := []func() (draft, bool){
		g.qFounderBirthplace, g.qAuthorBorn, g.qBirthCountry, g.qPublisherCity,
		g.qBirthRiver, g.qEmployerFounder,
		g.qBornFirst, g.qBothOcc, g.qLargerCity, g.qFoundedEarlier, g.qSameRiver,
	}
	seen := map[string]bool{}
	var out []Question
	for tries := 0; len(out) < g.opts.Questions; tries++ {
		if tries > 100*g.opts.Questions {
			return nil, fmt.Errorf("demo world: made only %d of %d distinct questions; enlarge the world", len(out), g.opts.Questions)
		}
		d, ok := makers[tries%len(makers)]()
		if !ok || seen[d.q] {
			continue
		}
		seen[d.q] = true
		out = append(out, g.finish(d, len(out)))
	}
	return out, nil
}

// finish attaches the id, level and context (gold pages plus distractors, shuffled).
func (g *gen) finish(d draft, n int) Question {
	sum := sha256.Sum256([]byte("reactgen-demo-hotpotqa-" + strconv.Itoa(n) + "-" + d.q))
	level := []string{"easy", "medium", "hard"}[min(d.hard, 2)]
	all := g.pages()
	byTitle := map[string]Page{}
	for _, p := range all {
		byTitle[p.Title] = p
	}
	var ctx []Paragraph
	gold := map[string]bool{}
	for _, f := range d.facts {
		if !gold[f.Title] {
			gold[f.Title] = true
			ctx = append(ctx, Paragraph{Title: f.Title, Sentences: byTitle[f.Title].Sentences})
		}
	}
	for want := len(ctx) + distractors; len(ctx) < want; {
		p := all[g.rng.IntN(len(all))]
		if gold[p.Title] || p.Disambiguation {
			continue
		}
		gold[p.Title] = true
		ctx = append(ctx, Paragraph{Title: p.Title, Sentences: p.Sentences})
	}
	g.rng.Shuffle(len(ctx), func(i, j int) { ctx[i], ctx[j] = ctx[j], ctx[i] })
	return Question{
		ID: hex.EncodeToString(sum[:12]), Question: d.q, Answer: d.a, Type: d.typ, Level: level,
		SupportingFacts: d.facts, Context: ctx,
	}
}

func (g *gen) anyPerson() *person { return g.people[g.rng.IntN(len(g.people))] }
func (g *gen) anyPlace() *place   { return g.places[g.rng.IntN(len(g.places))] }
func (g *gen) anyOrg() *org       { return g.orgs[g.rng.IntN(len(g.orgs))] }
func (g *gen) anyWork() *work     { return g.works[g.rng.IntN(len(g.works))] }

// hardness counts facts that need Lookup (past the fifth sentence) and homonyms.
func hardness(facts []SupportingFact, homonyms ...bool) int {
	n := 0
	for _, f := range facts {
		if f.Sentence >= 5 {
			n++
		}
	}
	for _, h := range homonyms {
		if h {
			n++
		}
	}
	return n
}

func bridge(q, a string, facts []SupportingFact, homonyms ...bool) (draft, bool) {
	return draft{q: q, a: a, typ: "bridge", facts: facts, hard: hardness(facts, homonyms...)}, true
}

func comparison(q, a string, facts []SupportingFact, homonyms ...bool) (draft, bool) {
	return draft{q: q, a: a, typ: "comparison", facts: facts, hard: hardness(facts, homonyms...)}, true
}

func (g *gen) qFounderBirthplace() (draft, bool) {
	o := g.anyOrg()
	f := o.founder
	return bridge(fmt.Sprintf("In which city was the founder of %s born?", o.name), f.birthplace.name,
		[]SupportingFact{{o.title, o.founded0}, {f.title, f.born0}}, f.homonym)
}

func (g *gen) qAuthorBorn() (draft, bool) {
	w := g.anyWork()
	role := map[string]string{"film": "director", "album": "composer"}[w.kind]
	if role == "" {
		role = "author"
	}
	a := w.author
	return bridge(fmt.Sprintf("In what year was the %s of %s born?", role, w.title), strconv.Itoa(a.born),
		[]SupportingFact{{w.title, 0}, {a.title, a.born0}}, a.homonym)
}

func (g *gen) qBirthCountry() (draft, bool) {
	p := g.anyPerson()
	return bridge(fmt.Sprintf("In which country was %s born?", personQ(p)), p.birthplace.country,
		[]SupportingFact{{p.title, p.born0}, {p.birthplace.name, 0}}, p.homonym)
}

func (g *gen) qPublisherCity() (draft, bool) {
	w := g.anyWork()
	verb := "published"
	if w.kind == "film" || w.kind == "album" {
		verb = "released"
	}
	o := w.publisher
	return bridge(fmt.Sprintf("In which city are the headquarters of the company that %s %s?", verb, w.title), o.hq.name,
		[]SupportingFact{{w.title, w.pub0}, {o.title, o.hq0}})
}

func (g *gen) qBirthRiver() (draft, bool) {
	p := g.anyPerson()
	c := p.birthplace
	return bridge(fmt.Sprintf("On which river lies the city where %s was born?", personQ(p)), c.river+" River",
		[]SupportingFact{{p.title, p.born0}, {c.name, c.river0}}, p.homonym)
}

func (g *gen) qEmployerFounder() (draft, bool) {
	p := g.anyPerson()
	o := p.employer
	if o.founder.name == p.name {
		return draft{}, false
	}
	return bridge(fmt.Sprintf("Who founded the company that %s worked for?", personQ(p)), o.founder.name,
		[]SupportingFact{{p.title, p.emp0}, {o.title, o.founded0}}, p.homonym)
}

func (g *gen) qBornFirst() (draft, bool) {
	a, b := g.anyPerson(), g.anyPerson()
	if a.born == b.born || a.name == b.name {
		return draft{}, false
	}
	ans := a.name
	if b.born < a.born {
		ans = b.name
	}
	return comparison(fmt.Sprintf("Who was born first, %s or %s?", personQ(a), personQ(b)), ans,
		[]SupportingFact{{a.title, a.born0}, {b.title, b.born0}}, a.homonym, b.homonym)
}

func (g *gen) qBothOcc() (draft, bool) {
	a := g.anyPerson()
	want := g.rng.IntN(2) == 0 // a "yes" question
	var b *person
	for range 50 {
		c := g.anyPerson()
		if c != a && !c.homonym && (c.occ == a.occ) == want {
			b = c
			break
		}
	}
	if b == nil || a.homonym {
		return draft{}, false
	}
	occ := a.occ
	if !want && g.rng.IntN(2) == 0 {
		occ = b.occ
	}
	ans := "no"
	if want {
		ans = "yes"
	}
	return comparison(fmt.Sprintf("Are %s and %s both %s?", a.name, b.name, occ.plural), ans,
		[]SupportingFact{{a.title, 0}, {b.title, 0}})
}

func (g *gen) qLargerCity() (draft, bool) {
	a, b := g.anyPlace(), g.anyPlace()
	if a == b {
		return draft{}, false
	}
	ans := a.name
	if b.pop > a.pop {
		ans = b.name
	}
	return comparison(fmt.Sprintf("Which city has the larger population, %s or %s?", a.name, b.name), ans,
		[]SupportingFact{{a.name, a.pop0}, {b.name, b.pop0}})
}

func (g *gen) qFoundedEarlier() (draft, bool) {
	a, b := g.anyOrg(), g.anyOrg()
	if a == b || a.founded == b.founded {
		return draft{}, false
	}
	ans := a.name
	if b.founded < a.founded {
		ans = b.name
	}
	return comparison(fmt.Sprintf("Which company was founded earlier, %s or %s?", a.name, b.name), ans,
		[]SupportingFact{{a.title, a.founded0}, {b.title, b.founded0}})
}

func (g *gen) qSameRiver() (draft, bool) {
	a := g.anyPlace()
	want := g.rng.IntN(2) == 0
	for range 50 {
		b := g.anyPlace()
		if b == a || (a.river == b.river) != want {
			continue
		}
		ans := "no"
		if want {
			ans = "yes"
		}
		return comparison(fmt.Sprintf("Do %s and %s lie on the same river?", a.name, b.name), ans,
			[]SupportingFact{{a.name, a.river0}, {b.name, b.river0}})
	}
	return draft{}, false
}

// underscored writes a page title as FEVER's evidence does.
func underscored(title string) string { return strings.ReplaceAll(title, " ", "_") }
