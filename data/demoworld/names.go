package demoworld

import (
	"math/rand/v2"
	"strings"
)

// Syllables for invented names. The combinations are chosen to read as plausible proper
// nouns while matching no real person, place or company a model could know.
var (
	onsets = []string{"b", "br", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "r", "s", "sk", "t", "th", "v", "z", "vr", "q"}
	nuclei = []string{"a", "e", "i", "o", "u", "ae", "ei", "ou", "y"}
	codas  = []string{"", "", "n", "r", "l", "s", "th", "m", "k", "x", "nd", "sk"}
)

// namer hands out invented names that are unique across the whole world.
type namer struct {
	rng  *rand.Rand
	used map[string]bool
}

func newNamer(rng *rand.Rand) *namer { return &namer{rng: rng, used: map[string]bool{}} }

func (n *namer) pick(list []string) string { return list[n.rng.IntN(len(list))] }

// word returns one invented capitalised word of min to max syllables.
func (n *namer) word(min, max int) string {
	k := min + n.rng.IntN(max-min+1)
	var b strings.Builder
	for i := range k {
		b.WriteString(n.pick(onsets))
		b.WriteString(n.pick(nuclei))
		if i == k-1 || n.rng.IntN(3) == 0 {
			b.WriteString(n.pick(codas))
		}
	}
	s := b.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

// unique returns a fresh value of gen that has not been handed out before.
func (n *namer) unique(gen func() string) string {
	for {
		s := gen()
		if len(s) < 4 || n.used[strings.ToLower(s)] {
			continue
		}
		n.used[strings.ToLower(s)] = true
		return s
	}
}

// fresh returns a unique invented word.
func (n *namer) fresh(min, max int) string {
	return n.unique(func() string { return n.word(min, max) })
}
