// Package demoworld generates reactgen's demo world: a small fictional encyclopedia of
// invented people, cities, companies and works, with HotpotQA-style questions and
// FEVER-style claims whose answers follow from that encyclopedia and nothing else, so a
// model cannot answer them from memory. It consumes only Options (a seed and sizes) and
// produces a World, which Write saves as corpus.jsonl, hotpotqa.json and fever.jsonl in
// the official formats of the two datasets. The same seed gives byte-identical files.
package demoworld

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Options sizes the world. Zero fields take the defaults, which give a world whose
// three files total well under 2 MB.
type Options struct {
	Seed      int64
	People    int // people pages, homonyms included
	Places    int // city pages
	Orgs      int // company pages
	Works     int // novels, films, albums and poetry collections
	Questions int // HotpotQA questions
	Claims    int // FEVER claims
}

// Defaults used for zero Options fields.
const (
	DefaultPeople    = 140
	DefaultPlaces    = 40
	DefaultOrgs      = 36
	DefaultWorks     = 70
	DefaultQuestions = 300
	DefaultClaims    = 180
)

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.People, DefaultPeople)
	def(&o.Places, DefaultPlaces)
	def(&o.Orgs, DefaultOrgs)
	def(&o.Works, DefaultWorks)
	def(&o.Questions, DefaultQuestions)
	def(&o.Claims, DefaultClaims)
	return o
}

// Page is one encyclopedia page of the world, as a list of sentences. Text joins them
// into the page text that corpus.jsonl carries.
type Page struct {
	Title          string
	Sentences      []string
	Disambiguation bool
}

// Text is the page text: the sentences joined by spaces, or one per line on a
// disambiguation page (so that "X may refer to:" stands as a sentence of its own).
func (p Page) Text() string {
	if p.Disambiguation {
		return strings.Join(p.Sentences, "\n")
	}
	return strings.Join(p.Sentences, " ")
}

// World is a generated demo world.
type World struct {
	Pages     []Page
	Questions []Question
	Claims    []Claim
}

type occupation struct {
	name, plural string
	kind         string // the kind of work this occupation produces; empty for none
}

var occupations = []occupation{
	{"novelist", "novelists", "novel"},
	{"poet", "poets", "poetry collection"},
	{"film director", "film directors", "film"},
	{"composer", "composers", "album"},
	{"painter", "painters", ""},
	{"chemist", "chemists", ""},
	{"physicist", "physicists", ""},
	{"architect", "architects", ""},
	{"engineer", "engineers", ""},
	{"botanist", "botanists", ""},
}

type industry struct {
	suffix, desc string
	publishes    []string // kinds of work this industry publishes
}

var industries = []industry{
	{"Press", "publishing house", []string{"novel", "poetry collection"}},
	{"Pictures", "film studio", []string{"film"}},
	{"Records", "record label", []string{"album"}},
	{"Shipyards", "shipbuilding company", nil},
	{"Pharmaceuticals", "pharmaceutical company", nil},
	{"Instruments", "maker of scientific instruments", nil},
	{"Books", "publishing house", []string{"novel", "poetry collection"}},
	{"Mining Company", "mining company", nil},
	{"Studios", "film studio", []string{"film"}},
	{"Mills", "textile manufacturer", nil},
}

var genres = map[string][]string{
	"novel":             {"historical", "mystery", "science fiction", "comic", "gothic", "adventure"},
	"film":              {"drama", "thriller", "comedy", "western", "war", "musical"},
	"album":             {"jazz", "folk", "choral", "orchestral", "chamber"},
	"poetry collection": {"love", "war", "pastoral", "religious"},
}

var (
	directions = []string{"north", "south", "east", "west", "centre", "northeast", "southwest"}
	nouns      = []string{"Lantern", "Orchard", "Harbour", "Winter", "Mirror", "Tide", "Garden", "Bridge", "Silence", "Salt", "Crown", "Ember", "Meadow", "Tower", "Vessel", "Compass", "Hollow", "Quarry", "Feather", "Anvil"}
	colours    = []string{"red", "blue", "green", "golden", "black", "white", "silver"}
	animals    = []string{"heron", "fox", "stag", "owl", "salmon", "hare", "falcon"}
	praise     = []string{"restrained tone", "careful structure", "vivid characters", "bold use of colour", "unusual structure", "humour"}
)

type fact = int // a sentence index on the entity's page

type place struct {
	name, country, dir, river string
	founded, pop              int
	deep                      bool
	river0, founded0, pop0    fact
	page                      Page
}

type person struct {
	name, surname, title string
	occ                  occupation
	born, died           int
	birthplace, school   *place
	employer             *org
	work                 *work
	homonym, deep        bool
	born0, work0, emp0   fact
	page                 Page
}

type org struct {
	name, title   string
	ind           industry
	founder       *person
	hq            *place
	founded       int
	deep          bool
	hq0, founded0 fact
	page          Page
}

type work struct {
	title, kind, genre string
	author             *person
	year               int
	publisher          *org
	setting            *place
	deep               bool
	pub0               fact
	page               Page
}

// gen holds the state of one generation.
type gen struct {
	rng    *rand.Rand
	names  *namer
	opts   Options
	places []*place
	people []*person
	orgs   []*org
	works  []*work
	disamb []Page
	rivers []string
	lands  []string
}

// Generate builds a world from opts. The same opts always give the same world.
func Generate(opts Options) (*World, error) {
	opts = opts.withDefaults()
	if opts.People < 10 || opts.Places < 4 || opts.Orgs < len(industries) || opts.Works < 4 {
		return nil, fmt.Errorf("demo world too small: need at least 10 people, 4 places, %d orgs and 4 works", len(industries))
	}
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed_da7a))
	g := &gen{rng: rng, names: newNamer(rng), opts: opts}
	g.build()
	w := &World{Pages: g.pages()}
	var err error
	if w.Questions, err = g.questions(); err != nil {
		return nil, err
	}
	if w.Claims, err = g.claims(); err != nil {
		return nil, err
	}
	return w, nil
}

func (g *gen) intn(lo, hi int) int { return lo + g.rng.IntN(hi-lo+1) }

func (g *gen) pick(list []string) string { return list[g.rng.IntN(len(list))] }

func (g *gen) otherPlace(not *place) *place {
	for {
		p := g.places[g.rng.IntN(len(g.places))]
		if p != not {
			return p
		}
	}
}

// build creates the entities and writes their pages.
func (g *gen) build() {
	g.makePlaces()
	g.makePeople()
	g.makeOrgs()
	g.makeWorks()
	g.writePages()
}

// makePlaces draws the countries, the rivers and the places, each place with a
// population no other place has.
func (g *gen) makePlaces() {
	for range 6 {
		g.lands = append(g.lands, g.names.fresh(2, 3))
	}
	for range 14 {
		g.rivers = append(g.rivers, g.names.fresh(2, 2))
	}
	pops := map[int]bool{}
	for range g.opts.Places {
		p := &place{
			name: g.names.fresh(2, 3), country: g.pick(g.lands), dir: g.pick(directions),
			river: g.pick(g.rivers), founded: g.intn(900, 1750), deep: g.rng.IntN(3) == 0,
		}
		for {
			// Thousands below a million, hundreds of thousands above, never .0.
			if g.rng.IntN(3) == 0 {
				p.pop = g.intn(11, 59) * 100_000
				if p.pop%1_000_000 == 0 {
					continue
				}
			} else {
				p.pop = g.intn(40, 990) * 1000
			}
			if !pops[p.pop] {
				pops[p.pop] = true
				break
			}
		}
		g.places = append(g.places, p)
	}
}

// makePeople draws the people, their birthplaces and schools, and the homonyms.
func (g *gen) makePeople() {
	for i := range g.opts.People {
		occ := occupations[i%len(occupations)]
		p := &person{occ: occ, born: g.intn(1820, 1930), deep: g.rng.IntN(3) == 0}
		p.died = p.born + g.intn(62, 90)
		p.surname = g.names.fresh(2, 3)
		if g.rng.IntN(10) == 0 {
			p.name = g.initials() + " " + p.surname
		} else {
			p.name = g.names.fresh(2, 2) + " " + p.surname
		}
		p.birthplace = g.places[g.rng.IntN(len(g.places))]
		p.school = g.otherPlace(p.birthplace)
		g.people = append(g.people, p)
	}
	// Homonyms: about one person in seventeen shares the name of an earlier one with a
	// different occupation, so both get titles with the occupation in parentheses.
	for i := 1; i+1 < len(g.people); i += 17 {
		a, b := g.people[i], g.people[i+1]
		if a.occ == b.occ {
			continue
		}
		b.name, b.surname = a.name, a.surname
		a.homonym, b.homonym = true, true
	}
	for _, p := range g.people {
		p.title = p.name
		if p.homonym {
			p.title = p.name + " (" + p.occ.name + ")"
		}
	}
}

// makeOrgs draws the organisations and founders, then each person's employer.
func (g *gen) makeOrgs() {
	for i := range g.opts.Orgs {
		ind := industries[i%len(industries)]
		o := &org{ind: ind, hq: g.places[g.rng.IntN(len(g.places))], deep: g.rng.IntN(3) == 0}
		o.name = g.names.unique(func() string { return g.names.word(2, 3) + " " + ind.suffix })
		o.title = o.name
		o.founder = g.people[g.rng.IntN(len(g.people))]
		o.founded = o.founder.born + g.intn(24, 44)
		g.orgs = append(g.orgs, o)
	}
	// Employers: a company founded by someone else before the person turned 40, so
	// the years of employment fall within the person's life where possible.
	for _, p := range g.people {
		for try := 0; p.employer == nil; try++ {
			o := g.orgs[g.rng.IntN(len(g.orgs))]
			if o.founder != p && (o.founded <= p.born+40 || try > 200) {
				p.employer = o
			}
		}
	}
}

// makeWorks draws the works, each by a person whose occupation creates them.
func (g *gen) makeWorks() {
	var creators []*person
	for _, p := range g.people {
		if p.occ.kind != "" {
			creators = append(creators, p)
		}
	}
	for i := range g.opts.Works {
		a := creators[i%len(creators)]
		w := &work{kind: a.occ.kind, author: a, year: a.born + g.intn(24, 50), deep: g.rng.IntN(3) == 0}
		w.genre = g.pick(genres[w.kind])
		w.setting = g.places[g.rng.IntN(len(g.places))]
		var pubs []*org
		for _, o := range g.orgs {
			for _, k := range o.ind.publishes {
				if k == w.kind {
					pubs = append(pubs, o)
				}
			}
		}
		w.publisher = pubs[g.rng.IntN(len(pubs))]
		w.title = g.names.unique(func() string {
			n, x := g.pick(nouns), g.names.word(2, 2)
			switch g.rng.IntN(4) {
			case 0:
				return "The " + n + " of " + x
			case 1:
				return x + "'s " + n
			case 2:
				return n + "s over " + x
			default:
				return "A " + n + " for " + x
			}
		})
		if a.work == nil {
			a.work = w
		}
		g.works = append(g.works, w)
	}
}

// writePages writes every entity's page, then the disambiguation pages.
func (g *gen) writePages() {
	for _, p := range g.places {
		g.placePage(p)
	}
	for _, p := range g.people {
		g.personPage(p)
	}
	for _, o := range g.orgs {
		g.orgPage(o)
	}
	for _, w := range g.works {
		g.workPage(w)
	}
	g.disambiguation()
}

// personRef names a person inside another page's prose, with the occupation so that
// homonyms can be told apart.
func personRef(p *person) string { return "the " + p.occ.name + " " + p.name }

// personQ names a person in a question or claim: plain, or with the occupation when
// the name is shared.
func personQ(p *person) string {
	if p.homonym {
		return personRef(p)
	}
	return p.name
}

// initials are two initials such as "J. K."; never A or I, which also open sentences.
func (g *gen) initials() string {
	const letters = "BCDEFGHJKLMNPRSTVW"
	return fmt.Sprintf("%c. %c.", letters[g.rng.IntN(len(letters))], letters[g.rng.IntN(len(letters))])
}

// year keeps a derived year in the past.
func year(y int) int { return min(y, 2022) }

// article puts "a" or "an" before a word.
func article(w string) string {
	if strings.ContainsRune("aeiou", rune(w[0])) {
		return "an " + w
	}
	return "a " + w
}

func (g *gen) doctor() string { return "Dr. " + g.names.fresh(2, 2) + " " + g.names.fresh(2, 3) }

// layout orders a page: the lead sentence, then the key facts and fillers. On a deep
// page four fillers come before the key facts, so every key fact lies past the fifth
// sentence and needs Lookup. It returns the sentences and the index of each key fact.
func (g *gen) layout(lead string, keys, fillers []string, deep bool) ([]string, []int) {
	g.rng.Shuffle(len(fillers), func(i, j int) { fillers[i], fillers[j] = fillers[j], fillers[i] })
	out := []string{lead}
	idx := make([]int, len(keys))
	if deep {
		out = append(out, fillers[:4]...)
		for i, k := range keys {
			idx[i] = len(out)
			out = append(out, k)
		}
		return out, idx
	}
	for i, k := range keys {
		idx[i] = len(out)
		out = append(out, k)
	}
	n := max(g.intn(2, 4), 5-len(out))
	if len(out)+n > 10 {
		n = 10 - len(out)
	}
	return append(out, fillers[:n]...), idx
}

func popText(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%d.%d million", n/1_000_000, n%1_000_000/100_000)
	}
	return fmt.Sprintf("%d,000", n/1000)
}

func (g *gen) placePage(p *place) {
	lead := fmt.Sprintf("%s is a city in the %s of %s.", p.name, p.dir, p.country)
	keys := []string{
		fmt.Sprintf("%s lies on the %s River.", p.name, p.river),
		fmt.Sprintf("%s was founded in %d.", p.name, p.founded),
		fmt.Sprintf("The population of %s is about %s.", p.name, popText(p.pop)),
	}
	if g.rng.IntN(2) == 0 {
		keys[0], keys[2] = keys[2], keys[0]
	}
	fillers := []string{
		fmt.Sprintf("The oldest building in the city is St. %s's Cathedral, completed in %d.", g.names.fresh(2, 2), p.founded+g.intn(40, 300)),
		fmt.Sprintf("The %s Observatory was opened by %s in %d.", p.name, g.doctor(), g.intn(1800, 1990)),
		fmt.Sprintf("The average July temperature in %s is %d.%d degrees.", p.name, g.intn(14, 31), g.intn(1, 9)),
		fmt.Sprintf("The local football club, %s Athletic, plays at the %s Ground.", p.name, g.names.fresh(2, 2)),
		fmt.Sprintf("A railway line to %s opened in %d.", g.otherPlace(p).name, g.intn(1840, 1930)),
		fmt.Sprintf("The %s Bridge carries the main road over the river.", g.names.fresh(2, 2)),
	}
	s, idx := g.layout(lead, keys, fillers, p.deep)
	for i, k := range keys {
		switch {
		case strings.Contains(k, " River."):
			p.river0 = idx[i]
		case strings.Contains(k, " was founded in "):
			p.founded0 = idx[i]
		default:
			p.pop0 = idx[i]
		}
	}
	p.page = Page{Title: p.name, Sentences: s}
}

func (g *gen) personPage(p *person) {
	lead := fmt.Sprintf("%s was %s whose career spanned %s decades.", p.name, article(p.occ.name), g.pick([]string{"three", "four", "five", "six"}))
	born := fmt.Sprintf("%s was born in %s in %d.", p.surname, p.birthplace.name, p.born)
	y1 := max(p.born+22, p.employer.founded)
	emp := fmt.Sprintf("%s worked for %s from %d to %d.", p.surname, p.employer.name, y1, y1+g.intn(3, 20))
	keys := []string{born, emp}
	if p.work != nil {
		keys = append(keys, fmt.Sprintf("%s is best known for the %s %s.", p.surname, p.work.kind, p.work.title))
	}
	keys = append(keys, fmt.Sprintf("%s studied at the University of %s.", p.surname, p.school.name))
	fillers := []string{
		fmt.Sprintf("In %d, %s received the %s Medal for lifetime achievement.", p.born+g.intn(40, 60), p.surname, g.names.fresh(2, 2)),
		fmt.Sprintf("A bronze statue of %s stands near St. %s's Church in %s.", p.surname, g.names.fresh(2, 2), p.birthplace.name),
		fmt.Sprintf("The historian %s wrote the first full biography of %s in %d.", g.doctor(), p.surname, year(p.died+g.intn(5, 40))),
		fmt.Sprintf("%s spent %d.%d years abroad before returning home.", p.surname, g.intn(1, 9), g.intn(1, 9)),
		fmt.Sprintf("%s was elected a fellow of the %s Academy in %d.", p.surname, p.birthplace.country, p.born+g.intn(35, 50)),
		fmt.Sprintf("%s died in %d.", p.surname, p.died),
		fmt.Sprintf("Letters by %s are kept in the %s City Archive.", p.surname, p.school.name),
	}
	s, idx := g.layout(lead, keys, fillers, p.deep)
	p.born0, p.emp0, p.work0 = idx[0], idx[1], -1
	if p.work != nil {
		p.work0 = idx[2]
	}
	p.page = Page{Title: p.title, Sentences: s}
}

func (g *gen) orgPage(o *org) {
	lead := fmt.Sprintf("%s is a %s.", o.name, o.ind.desc)
	keys := []string{
		fmt.Sprintf("The headquarters of %s are in %s.", o.name, o.hq.name),
		fmt.Sprintf("%s was founded in %d by %s.", o.name, o.founded, personRef(o.founder)),
	}
	if g.rng.IntN(2) == 0 {
		keys[0], keys[1] = keys[1], keys[0]
	}
	fillers := []string{
		fmt.Sprintf("In %d, the company opened a branch in %s.", o.founded+g.intn(5, 60), g.otherPlace(o.hq).name),
		fmt.Sprintf("From %d to %d, %s was run by %s %s.", o.founded+20, o.founded+g.intn(25, 40), o.name, g.initials(), g.names.fresh(2, 3)),
		fmt.Sprintf("Its annual revenue reached %d.%d billion crowns in %d.", g.intn(1, 9), g.intn(1, 9), year(o.founded+g.intn(30, 90))),
		fmt.Sprintf("The company's emblem is a %s %s.", g.pick(colours), g.pick(animals)),
		fmt.Sprintf("%s was listed on the %s Stock Exchange in %d.", o.name, o.hq.country, year(o.founded+g.intn(10, 50))),
		fmt.Sprintf("A museum about the history of %s opened in %s in %d.", o.name, o.hq.name, year(o.founded+g.intn(50, 100))),
	}
	s, idx := g.layout(lead, keys, fillers, o.deep)
	o.hq0, o.founded0 = idx[0], idx[1]
	if strings.Contains(keys[0], " was founded in ") {
		o.hq0, o.founded0 = idx[1], idx[0]
	}
	o.page = Page{Title: o.title, Sentences: s}
}

func (g *gen) workPage(w *work) {
	var lead, pub string
	switch w.kind {
	case "novel":
		lead = fmt.Sprintf("%s is %s novel by %s.", w.title, article(w.genre), w.author.name)
		pub = fmt.Sprintf("%s was first published in %d by %s.", w.title, w.year, w.publisher.name)
	case "poetry collection":
		lead = fmt.Sprintf("%s is a collection of %s poems by %s.", w.title, w.genre, w.author.name)
		pub = fmt.Sprintf("%s was first published in %d by %s.", w.title, w.year, w.publisher.name)
	case "film":
		lead = fmt.Sprintf("%s is %s film directed by %s.", w.title, article(w.genre), w.author.name)
		pub = fmt.Sprintf("%s was released in %d by %s.", w.title, w.year, w.publisher.name)
	default:
		lead = fmt.Sprintf("%s is %s album by %s.", w.title, article(w.genre), w.author.name)
		pub = fmt.Sprintf("%s was released in %d by %s.", w.title, w.year, w.publisher.name)
	}
	fillers := []string{
		fmt.Sprintf("Much of the %s is set in %s.", w.kind, w.setting.name),
		fmt.Sprintf("%s won the %s Prize in %d.", w.title, g.names.fresh(2, 2), w.year+g.intn(1, 3)),
		fmt.Sprintf("Sales passed %d.%d million copies by %d.", g.intn(1, 4), g.intn(1, 9), year(w.year+g.intn(5, 30))),
		fmt.Sprintf("The cover was designed by %s.", g.doctor()),
		fmt.Sprintf("Critics praised its %s.", g.pick(praise)),
		fmt.Sprintf("A restored edition appeared in %d.", year(w.year+g.intn(30, 70))),
	}
	s, idx := g.layout(lead, []string{pub}, fillers, w.deep)
	w.pub0 = idx[0]
	w.page = Page{Title: w.title, Sentences: s}
}

// disambiguation writes a "Name may refer to:" page for every shared name.
func (g *gen) disambiguation() {
	byName := map[string][]*person{}
	var order []string
	for _, p := range g.people {
		if !p.homonym {
			continue
		}
		if byName[p.name] == nil {
			order = append(order, p.name)
		}
		byName[p.name] = append(byName[p.name], p)
	}
	for _, name := range order {
		s := []string{name + " may refer to:"}
		for _, p := range byName[name] {
			s = append(s, fmt.Sprintf("%s, a %s born in %s in %d.", p.title, p.occ.name, p.birthplace.name, p.born))
		}
		g.disamb = append(g.disamb, Page{Title: name, Sentences: s, Disambiguation: true})
	}
}

// pages lists every page: places, people, companies, works, then disambiguation pages.
func (g *gen) pages() []Page {
	var out []Page
	for _, p := range g.places {
		out = append(out, p.page)
	}
	for _, p := range g.people {
		out = append(out, p.page)
	}
	for _, o := range g.orgs {
		out = append(out, o.page)
	}
	for _, w := range g.works {
		out = append(out, w.page)
	}
	return append(out, g.disamb...)
}
