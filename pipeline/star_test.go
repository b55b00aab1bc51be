package pipeline

import (
	"slices"
	"testing"
)

func TestPreviousUnsolvedAndPin(t *testing.T) {
	p := &Previous{Round: 1, Solved: map[string]bool{"q2": true}, Input: Input{Role: "star-previous", Path: "r1/kept.jsonl", SHA256: "abc"}}
	qs := []Question{{ID: "q1"}, {ID: "q2"}, {ID: "q3"}}
	var ids []string
	for _, q := range p.Unsolved(qs) {
		ids = append(ids, q.ID)
	}
	if !slices.Equal(ids, []string{"q1", "q3"}) {
		t.Errorf("unsolved %v: want [q1 q3]", ids)
	}
	if len(qs) != 3 || qs[1].ID != "q2" {
		t.Errorf("Unsolved changed its argument: %v", qs)
	}
	spec := Spec{Inputs: []Input{{Role: "task"}}}
	p.Pin(&spec)
	if spec.Results[PreviousKey] != "abc" || len(spec.Inputs) != 2 || spec.Inputs[1] != p.Input {
		t.Errorf("pinned spec: results %v, inputs %v", spec.Results, spec.Inputs)
	}
}
