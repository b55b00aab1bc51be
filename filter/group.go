package filter

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"github.com/reactgen/reactgen/pipeline"
)

var (
	_ GroupRule = dedupeRule{}
	_ GroupRule = balanceRule{}
)

// dedupeRule drops, per question, trajectories identical to an earlier one (same
// normalised actions and thoughts: code duplicate), then keeps at most max of the rest
// (code over_question_cap) chosen by policy: first (input order), shortest (correct
// first, then fewest steps, then input order) or diverse (greedy: each next pick is the
// one whose set of actions is farthest, by Jaccard distance, from its nearest pick).
// max 0 means no cap.
type dedupeRule struct {
	max    int
	policy string
}

func (dedupeRule) Name() string { return "dedupe" }

func (r dedupeRule) Select(cands []Candidate) map[int]pipeline.Reject {
	out := map[int]pipeline.Reject{}
	var order []string
	byQ := make(map[string][]int, len(cands)) // positions in cands
	for i, c := range cands {
		if _, ok := byQ[c.QuestionID]; !ok {
			order = append(order, c.QuestionID)
		}
		byQ[c.QuestionID] = append(byQ[c.QuestionID], i)
	}
	for _, q := range order {
		group := byQ[q]
		if len(group) == 1 {
			continue // no duplicate, and within any cap (max is at least 1, or none)
		}
		seen := map[uint64]string{}
		var uniq []Candidate
		for _, i := range group {
			c := cands[i]
			if first, ok := seen[c.Trajectory]; ok {
				out[c.Index] = pipeline.Reject{Rule: "dedupe", Code: CodeDuplicate, Detail: "same trajectory as " + first}
				continue
			}
			seen[c.Trajectory] = c.ID
			uniq = append(uniq, c)
		}
		if r.max <= 0 || len(uniq) <= r.max {
			continue
		}
		var chosen []Candidate
		switch r.policy {
		case "shortest":
			slices.SortStableFunc(uniq, func(a, b Candidate) int {
				if a.Correct != b.Correct {
					if a.Correct {
						return -1
					}
					return 1
				}
				return cmp.Or(cmp.Compare(a.Steps, b.Steps), cmp.Compare(a.Index, b.Index))
			})
			chosen = uniq[:r.max]
		case "diverse":
			chosen = diverse(uniq, r.max)
		default:
			chosen = uniq[:r.max]
		}
		keep := map[int]bool{}
		for _, c := range chosen {
			keep[c.Index] = true
		}
		for _, c := range uniq {
			if !keep[c.Index] {
				out[c.Index] = pipeline.Reject{Rule: "dedupe", Code: CodeOverQuestionCap,
					Detail: fmt.Sprintf("question %s keeps %d (%s)", q, r.max, cmp.Or(r.policy, "first"))}
			}
		}
	}
	return out
}

// diverse picks k candidates greedily, starting from the first in input order.
func diverse(cands []Candidate, k int) []Candidate {
	sets := make([]map[uint64]bool, len(cands))
	for i, c := range cands {
		sets[i] = map[uint64]bool{}
		for _, a := range c.Actions {
			sets[i][a] = true
		}
	}
	picked := []int{0}
	used := map[int]bool{0: true}
	for len(picked) < k {
		best, bestD := -1, -1.0
		for i := range cands {
			if used[i] {
				continue
			}
			d := math.Inf(1)
			for _, p := range picked {
				d = math.Min(d, jaccardDistance(sets[i], sets[p]))
			}
			if d > bestD {
				best, bestD = i, d
			}
		}
		picked = append(picked, best)
		used[best] = true
	}
	out := make([]Candidate, len(picked))
	for i, p := range picked {
		out[i] = cands[p]
	}
	return out
}

func jaccardDistance(a, b map[uint64]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter := 0
	for x := range a {
		if b[x] {
			inter++
		}
	}
	return 1 - float64(inter)/float64(len(a)+len(b)-inter)
}

// balanceRule downsamples over-represented classes (FEVER gold labels, or HotpotQA
// question types, per filter.balance_by) so that no class holds more than
// floor(smallest × (1 + tolerance)) episodes. Which episodes of a class stay is decided
// by the hash of their ids, so the choice is deterministic and independent of input order.
// An empty class name (no type recorded) counts as its own class.
type balanceRule struct{ tolerance float64 }

func (balanceRule) Name() string { return "balance" }

func (r balanceRule) Select(cands []Candidate) map[int]pipeline.Reject {
	byClass := map[string][]Candidate{}
	for _, c := range cands {
		byClass[c.Class] = append(byClass[c.Class], c)
	}
	if len(byClass) < 2 {
		return nil
	}
	smallest := len(cands)
	for _, cs := range byClass {
		smallest = min(smallest, len(cs))
	}
	limit := max(smallest, int(math.Floor(float64(smallest)*(1+r.tolerance)+1e-9)))
	out := map[int]pipeline.Reject{}
	for class, cs := range byClass {
		if len(cs) <= limit {
			continue
		}
		slices.SortFunc(cs, func(a, b Candidate) int {
			return cmp.Or(cmp.Compare(idHash(a.ID), idHash(b.ID)), cmp.Compare(a.Index, b.Index))
		})
		for _, c := range cs[limit:] {
			out[c.Index] = pipeline.Reject{Rule: "balance", Code: CodeOverBalance,
				Detail: fmt.Sprintf("class %q has %d, limit %d", class, len(cs), limit)}
		}
	}
	return out
}

func idHash(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
