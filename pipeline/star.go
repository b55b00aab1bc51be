package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// StageRound is the stage of a STaR round that carries the earlier rounds' kept episodes
// into the run's episode log (star.previous).
const StageRound = "round"

// RoundRecord is one STaR round as a later round's manifest records it.
type RoundRecord struct {
	Round int    `json:"round"`
	Dir   string `json:"dir"`
	RunID string `json:"run_id"`
	Model string `json:"model"` // the policy that generated the round's new episodes
	Kept  int    `json:"kept"`  // kept episodes the round added
}

// Previous is the run a STaR round builds on: round k's kept episodes (its own and the
// earlier rounds' it carried) and what its manifest says of its rounds.
type Previous struct {
	Dir    string
	Round  int             // round k: 1 for a run that was not itself a round
	Solved map[string]bool // question ids with a kept episode
	Kept   []Episode       // every kept episode, its Round set
	Rounds []RoundRecord   // rounds 1..k
	Input  Input           // kept.jsonl, pinned
}

// ReadPrevious reads the run directory of round k for round k+1.
func ReadPrevious(dir string) (*Previous, error) {
	m, err := ReadManifest(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &ConfigError{Key: "star.previous", Message: fmt.Sprintf("%s: %v", dir, ErrNoRun)}
	}
	if err != nil {
		return nil, &ConfigError{Key: "star.previous", Message: err.Error()}
	}
	kept := filepath.Join(dir, KeptFile)
	in, err := DescribeInput("star-previous", kept)
	if err != nil {
		return nil, &ConfigError{Key: "star.previous", Message: fmt.Sprintf("%v (run the filter stage of %s first)", err, dir)}
	}
	p := &Previous{Dir: dir, Round: max(m.Round, 1), Solved: map[string]bool{}, Rounds: append([]RoundRecord(nil), m.Rounds...), Input: in}
	own := 0
	model := ""
	for ep, err := range ReadKept(kept) {
		if err != nil {
			return nil, &InputError{Err: err}
		}
		if ep.Round == 0 {
			ep.Round = p.Round
		}
		if ep.Round == p.Round {
			own++
			if model == "" {
				model = ep.Policy
			}
		}
		p.Solved[ep.QuestionID] = true
		p.Kept = append(p.Kept, ep)
	}
	p.Rounds = append(p.Rounds, RoundRecord{Round: p.Round, Dir: dir, RunID: m.RunID, Model: model, Kept: own})
	return p, nil
}

// Unsolved are the questions of qs that no earlier round solved, in order: the ones a
// STaR round asks.
func (p *Previous) Unsolved(qs []Question) []Question {
	open := qs[:0:0]
	for _, q := range qs {
		if !p.Solved[q.ID] {
			open = append(open, q)
		}
	}
	return open
}

// PreviousKey is the result key that pins the previous round's kept episodes.
const PreviousKey = "star.previous"

// Pin records the previous round in a STaR round's spec: its kept.jsonl is an input, and
// its hash a result key, so that a resume against a changed earlier round is refused.
func (p *Previous) Pin(spec *Spec) {
	spec.Inputs = append(spec.Inputs, p.Input)
	if spec.Results == nil {
		spec.Results = map[string]string{}
	}
	spec.Results[PreviousKey] = p.Input.SHA256
}

// RoundID is the id of an episode of STaR round round (2 and on): the episode's id with
// the round hashed in, so that rounds that ask the same question never share an id.
func RoundID(id string, round int) string {
	if round <= 1 {
		return id
	}
	sum := sha256.Sum256([]byte(id + "\x00round " + strconv.Itoa(round)))
	return hex.EncodeToString(sum[:])[:16]
}

// RoundStage appends the previous rounds' kept episodes to the run's episode log, once:
// those already in the log (a resumed round) are skipped. The filter stage then judges the
// merged log under one dedupe policy; generate is handed only the questions not solved.
type RoundStage struct {
	Previous  *Previous
	RunConfig RunConfig
}

var _ Stage = RoundStage{}

// Name implements Stage.
func (RoundStage) Name() string { return StageRound }

// Run implements Stage.
func (s RoundStage) Run(ctx context.Context, r *Run) (Counts, error) {
	p := s.Previous
	log, state, _, err := OpenEpisodeLog(r.Dir.File(EpisodesFile), s.RunConfig.FsyncEvery, s.RunConfig.FsyncInterval)
	if err != nil {
		return nil, err
	}
	defer log.Close() // idempotent: the Close below reports the error
	have := map[string]bool{}
	for ep, err := range ReadEpisodes(r.Dir.File(EpisodesFile)) {
		if err != nil {
			return nil, err
		}
		have[ep.ID] = true
	}
	added := 0
	for _, ep := range p.Kept {
		if have[ep.ID] || state.Done[ep.Key()] {
			continue
		}
		if err := log.Write(ctx, ep); err != nil {
			return nil, err
		}
		added++
	}
	if err := log.Close(); err != nil {
		return nil, err
	}
	r.Manifest.Round = p.Round + 1
	r.Manifest.Rounds = p.Rounds
	return Counts{"carried": len(p.Kept), "added": added, "solved_before": len(p.Solved), "round": p.Round + 1}, nil
}
