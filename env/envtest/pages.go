package envtest

import (
	"fmt"

	"github.com/reactgen/reactgen/env"
)

// Pages returns the fictional page set that RunConformance builds a corpus from: ordinary
// pages, two disambiguation pages (one that already says "may refer to", one that is a
// bare list), a long page with a keyword beyond its first five sentences, a forty-sentence
// page for lookup cycling, a title with an apostrophe and one with accents, two titles
// that differ only in letter case (Tamsin Reach, TAMSIN REACH), and a disambiguation
// page titled "Kell (disambiguation)" with no page Kell. The disambiguation pages give
// their text, one entry a line; the others leave it to their sentences joined by spaces
// (env.PageText). Each call returns a fresh copy.
func Pages() []env.Page {
	tower := make([]string, 0, 40)
	for i := range 40 {
		if i%4 == 1 {
			tower = append(tower, fmt.Sprintf("In year %d of the chronicle the great bell of Ostrow Tower was recast.", 1500+i*7))
		} else {
			tower = append(tower, fmt.Sprintf("In year %d of the chronicle the keepers of Ostrow Tower repaired the stair.", 1500+i*7))
		}
	}
	return []env.Page{
		{Title: "Marrow Lake", Sentences: []string{
			"Marrow Lake is a glacial lake in the northern uplands of Karsa.",
			"Its reed beds shelter a colony of grey herons.",
			"The lake is fed by the Vint River and drains to the east.",
			"A cable ferry has crossed the narrows since 1888.",
			"The village of Harrow Town stands on its southern shore.",
			"Winters freeze the surface for about ten weeks.",
			"Ornithologists count the herons every spring.",
			"The deepest point lies 61 metres below the surface.",
			"Fishing is limited to rod and line.",
			"A stone pier was built in 1902.",
			"Local legend holds that a white heron guards the lake.",
			"The poet Orla Vint wrote about the lake in her first book.",
		}},
		{Title: "Orla Vint", Sentences: []string{
			"Orla Vint (born 1950) is a poet from Karsa.",
			"She is best known for the novel The Grey Tide.",
			"Vint lived for many years beside Marrow Lake.",
		}},
		{Title: "Vint River", Sentences: []string{
			"The Vint River is a river in Karsa, 140 kilometres long.",
			"It rises in the Kell Hills and flows into Marrow Lake.",
		}},
		{Title: "Vint", Disambiguation: true, Sentences: []string{
			"Vint may refer to:",
			"Orla Vint (born 1950), a poet from Karsa.",
			"Vint River, a river in Karsa.",
		}, Text: "Vint may refer to:\nOrla Vint (born 1950), a poet from Karsa.\nVint River, a river in Karsa."},
		{Title: "Harrow", Disambiguation: true, Sentences: []string{
			"Harrow Town, a market town in Elsmere.",
			"Harrow (band), a rock band from Karsa.",
		}, Text: "Harrow Town, a market town in Elsmere.\nHarrow (band), a rock band from Karsa."},
		{Title: "Kestrel Bay", Sentences: []string{
			"Kestrel Bay is a sheltered inlet on the western coast of Elsmere.",
			"Its harbour was dredged in 1931.",
		}},
		{Title: "The Grey Tide", Sentences: []string{
			"The Grey Tide is a 1979 novel by the Karsan poet Orla Vint.",
			"It follows a ferry keeper during a long winter.",
			"The novel won the Elsmere Book Prize in 1980.",
		}},
		{Title: "Ostrow Tower", Sentences: tower},
		{Title: "Brannock's Ferry", Sentences: []string{
			"Brannock's Ferry is a hamlet at a river crossing in Elsmere.",
			"The crossing was replaced by a bridge in 1967.",
		}},
		{Title: "Tamsin Reach", Sentences: []string{
			"Tamsin Reach is a slow stretch of the Vint River below Marrow Lake.",
		}},
		{Title: "TAMSIN REACH", Sentences: []string{
			"TAMSIN REACH is a radio survey of the Karsan uplands, begun in 1962.",
		}},
		{Title: "Kell (disambiguation)", Disambiguation: true, Sentences: []string{
			"Kell may refer to:",
			"Kell Hills, a range in Karsa.",
			"Kell Tarn, a lake in the Kell Hills.",
		}, Text: "Kell may refer to:\nKell Hills, a range in Karsa.\nKell Tarn, a lake in the Kell Hills."},
		{Title: "Zélie Marché", Sentences: []string{
			"Zélie Marché (1901–1988) was a painter of harbour scenes.",
			"She painted Kestrel Bay more than forty times.",
		}},
	}
}
