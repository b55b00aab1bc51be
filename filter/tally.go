package filter

import (
	"github.com/reactgen/reactgen/pipeline"
)

// Tally counts, as generate writes episodes, how many of them this chain will keep, so
// that generate.target_correct counts kept episodes rather than correct ones and
// generate spends no attempt on a question already solved. An episode counts when every
// per-episode rule keeps it and, under dedupe, when its trajectory is new for its
// question and the question holds fewer than filter.max_per_question (which episodes of a
// question dedupe keeps depends on filter.dedupe_policy; how many does not). balance is
// not counted: it depends on the final proportions, and can only drop more. Retryable
// episodes (error, budget, interrupted) never count: a resume runs them again. A Tally
// holds per question the hashes of its counted trajectories; it is not safe for
// concurrent use (generate calls it under its lock).
type Tally struct {
	c      *Chain
	dedupe bool
	cap    int                 // 0: no cap
	hashes map[string][]uint64 // per question, under dedupe: the counted trajectories
	byQ    map[string]int      // per question: counted episodes
	kept   int
}

// Tally returns a Tally of the chain's verdicts. The chain must not Run while the Tally is
// in use (a decontaminate rule records what it finds).
func (c *Chain) Tally() *Tally {
	t := &Tally{c: c, hashes: map[string][]uint64{}, byQ: map[string]int{}}
	for _, g := range c.groups {
		if d, ok := g.(dedupeRule); ok {
			t.dedupe, t.cap = true, d.max
		}
	}
	return t
}

// Add counts ep and reports whether the chain will keep it.
func (t *Tally) Add(ep *pipeline.Episode) bool {
	if ep.Retryable() || len(t.c.judge(ep)) > 0 {
		return false
	}
	if t.dedupe {
		hashes := t.hashes[ep.QuestionID]
		if t.cap > 0 && len(hashes) >= t.cap {
			return false // over the question's cap
		}
		h, _ := trajectoryHash(ep)
		for _, x := range hashes {
			if x == h {
				return false // a duplicate
			}
		}
		t.hashes[ep.QuestionID] = append(hashes, h)
	}
	t.byQ[ep.QuestionID]++
	t.kept++
	return true
}

// Solved reports whether a further episode of the question could not be kept: under
// dedupe with a cap, once the question holds max_per_question counted episodes. Without a
// cap (or without dedupe) every new correct trajectory is kept, so a question is solved
// once it holds one: further attempts go to the questions still without any.
func (t *Tally) Solved(questionID string) bool {
	n := t.byQ[questionID]
	if t.dedupe && t.cap > 0 {
		return n >= t.cap
	}
	return n > 0
}

// Kept is how many counted episodes the chain will keep.
func (t *Tally) Kept() int { return t.kept }
