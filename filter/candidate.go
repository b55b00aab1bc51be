package filter

import (
	"runtime"
	"sync"

	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// candidateJobs computes the candidates of a pass's survivors off the reading
// goroutine: they are scored and hashed in batches by up to GOMAXPROCS goroutines, and
// wait returns them in input order. A Chain's candidate is safe for concurrent use.
type candidateJobs struct {
	c       *Chain
	batch   []candidateJob
	results []*[]Candidate // per batch, in order
	sem     chan struct{}
	wg      sync.WaitGroup
}

type candidateJob struct {
	idx int
	ep  *pipeline.Episode
}

const candidateBatch = 256

func newCandidateJobs(c *Chain) *candidateJobs {
	return &candidateJobs{c: c, sem: make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))}
}

// add queues the survivor at input position idx; ep must not change afterwards.
func (j *candidateJobs) add(idx int, ep *pipeline.Episode) {
	j.batch = append(j.batch, candidateJob{idx: idx, ep: ep})
	if len(j.batch) == candidateBatch {
		j.flush()
	}
}

func (j *candidateJobs) flush() {
	if len(j.batch) == 0 {
		return
	}
	out, batch := new([]Candidate), j.batch
	j.results = append(j.results, out)
	j.batch = make([]candidateJob, 0, candidateBatch)
	j.sem <- struct{}{} // at most GOMAXPROCS batches in flight: the reader waits
	j.wg.Add(1)
	go func() {
		defer func() { <-j.sem; j.wg.Done() }()
		cands := make([]Candidate, len(batch))
		for i, b := range batch {
			cands[i] = j.c.candidate(b.idx, b.ep)
		}
		*out = cands
	}()
}

// wait returns every queued candidate, in the order they were added.
func (j *candidateJobs) wait() []Candidate {
	j.flush()
	j.wg.Wait()
	n := 0
	for _, r := range j.results {
		n += len(*r)
	}
	all := make([]Candidate, 0, n)
	for _, r := range j.results {
		all = append(all, *r...)
	}
	return all
}

func (c *Chain) candidate(idx int, ep *pipeline.Episode) Candidate {
	cd := Candidate{Index: idx, ID: ep.ID, QuestionID: ep.QuestionID, Steps: len(ep.Steps), Correct: ep.Correct}
	if ep.Answer != "" {
		cd.Correct = scoreCorrect(c.task, ep.Prediction, ep.Answer)
	}
	switch c.bal { // only balance reads the class
	case "type":
		cd.Class = ep.QuestionType
	case "label":
		cd.Class, _ = score.Label(ep.Answer)
	}
	cd.Trajectory, cd.Actions = trajectoryHash(ep)
	cd.masks = maskSteps(ep, c.mask)
	cd.remask = len(cd.masks) > 0 || len(ep.MaskedSteps) > 0
	return cd
}

// scoreCorrect is score.Score's verdict. A prediction that is the gold answer byte for
// byte is correct without normalising either (Score normalises both, and equal strings
// normalise alike).
func scoreCorrect(task, pred, gold string) bool {
	if pred == gold {
		return true
	}
	correct, _, _ := score.Score(task, pred, gold)
	return correct
}
