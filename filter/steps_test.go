package filter

import (
	"errors"
	"reflect"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/pipeline"
)

func TestMaskSteps(t *testing.T) {
	ep := pipeline.Episode{ID: "e", Steps: []pipeline.Step{
		{Action: "Search[Carrow]", ActionType: pipeline.ActionSearch, Argument: "Carrow", Observation: "Carrow is a town."},
		{Action: "Lookup[mill]", ActionType: pipeline.ActionLookup, Argument: "mill", Observation: "(Result 1 / 1) The mill."},
		{Action: "Search[ carrow ]", ActionType: pipeline.ActionSearch, Argument: " carrow ", Observation: "Carrow is a town."},
		{Action: "jump[Carrow]", ActionType: pipeline.ActionInvalid, Observation: "Invalid action: jump[Carrow]"},
		{Action: "Lookup[river]", ActionType: pipeline.ActionLookup, Argument: "river", Observation: env.NoPageObservation},
		{Action: "Search[Millbrook]", ActionType: pipeline.ActionSearch, Argument: "Millbrook", Observation: "Could not find Millbrook. Similar: []."},
		{Action: "Finish[Aldbrook]", ActionType: pipeline.ActionFinish, Argument: "Aldbrook"},
	}}
	tests := []struct {
		codes []string
		want  []pipeline.MaskedStep
	}{
		{nil, nil},
		{[]string{"repeated_search"}, []pipeline.MaskedStep{{Step: 3, Code: "repeated_search"}}},
		{[]string{"invalid_action"}, []pipeline.MaskedStep{{Step: 4, Code: "invalid_action"}}},
		// An invalid action's observation is an error too; with both, the first code in
		// MaskCodes order names the step.
		{[]string{"error_observation"}, []pipeline.MaskedStep{{Step: 4, Code: "error_observation"}, {Step: 5, Code: "error_observation"}}},
		{[]string{"error_observation", "repeated_search", "invalid_action"}, []pipeline.MaskedStep{
			{Step: 3, Code: "repeated_search"}, {Step: 4, Code: "invalid_action"}, {Step: 5, Code: "error_observation"}}},
	}
	for _, tt := range tests {
		codes, err := newMasker(tt.codes, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := maskSteps(&ep, codes); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("mask %v: got %v, want %v", tt.codes, got, tt.want)
		}
	}
	// The Finish is never masked, even when it repeats nothing else would.
	fin := pipeline.Episode{Steps: []pipeline.Step{{Action: "Finish[x]", ActionType: pipeline.ActionFinish, Observation: "Invalid action"}}}
	if got := maskSteps(&fin, MaskCodes); got != nil {
		t.Errorf("a lone Finish: masked %v", got)
	}
}

func TestMaskStepsConfig(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cfg   pipeline.FilterConfig
		valid bool
	}{
		{"unknown code", pipeline.FilterConfig{Rules: []string{"correct"}, MaskSteps: []string{"repeated_serch"}}, false},
		{"twice", pipeline.FilterConfig{Rules: []string{"correct"}, MaskSteps: []string{"repeated_search", "repeated_search"}}, false},
		{"masked steps a rule rejects", pipeline.FilterConfig{Rules: []string{"correct", "no_invalid_actions"}, MaskSteps: []string{"invalid_action"}}, false},
		{"near-misses kept", pipeline.FilterConfig{Rules: []string{"correct", "no_loops"}, MaskSteps: []string{"invalid_action"}}, true},
	} {
		_, err := New(tt.cfg, pipeline.TaskHotpotQA, Options{})
		var ce *pipeline.ConfigError
		if tt.valid != (err == nil) || (!tt.valid && (!errors.As(err, &ce) || ce.Key != "filter.mask_steps")) {
			t.Errorf("%s: got %v", tt.name, err)
		}
	}
}
