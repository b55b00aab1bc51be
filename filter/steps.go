package filter

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/pipeline"
)

// Step mask codes (filter.mask_steps): the bad steps a kept episode may hold, masked so
// that the export puts no loss on them.
const (
	MaskInvalidAction    = "invalid_action"    // an action the environment does not know (action_type invalid)
	MaskRepeatedSearch   = "repeated_search"   // a Search of an entity the episode searched before
	MaskErrorObservation = "error_observation" // an action the environment could not carry out (env.Failed)
)

// MaskCodes are the codes filter.mask_steps accepts, in the order a step is judged.
var MaskCodes = []string{MaskInvalidAction, MaskRepeatedSearch, MaskErrorObservation}

// newMasker checks filter.mask_steps against the rules: a code whose steps a rule rejects
// whole episodes for would never mask anything.
func newMasker(codes, rules []string) ([]string, error) {
	seen := map[string]bool{}
	for _, c := range codes {
		if !slices.Contains(MaskCodes, c) {
			return nil, &pipeline.ConfigError{Key: "filter.mask_steps", Message: fmt.Sprintf("%q is not one of %s (did you mean %q?)",
				c, strings.Join(MaskCodes, ", "), nearest(c, MaskCodes))}
		}
		if seen[c] {
			return nil, &pipeline.ConfigError{Key: "filter.mask_steps", Message: fmt.Sprintf("%q is listed twice", c)}
		}
		seen[c] = true
	}
	if seen[MaskInvalidAction] && slices.Contains(rules, "no_invalid_actions") {
		return nil, &pipeline.ConfigError{Key: "filter.mask_steps", Message: "invalid_action steps are to be masked, but the rule " +
			"no_invalid_actions rejects every episode that has one: drop no_invalid_actions from filter.rules to keep such near-misses with those steps masked"}
	}
	var out []string
	for _, c := range MaskCodes { // judged in MaskCodes order
		if seen[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

// maskSteps returns the steps of ep that codes mark bad, each under the first code that
// marks it. The last step of a walked trajectory, its Finish, is never masked.
func maskSteps(ep *pipeline.Episode, codes []string) []pipeline.MaskedStep {
	if len(codes) == 0 {
		return nil
	}
	var out []pipeline.MaskedStep
	searched := map[string]bool{}
	for i, s := range ep.Steps {
		repeated := false
		if s.ActionType == pipeline.ActionSearch {
			k := normAction(s.Argument)
			repeated = searched[k]
			searched[k] = true
		}
		if i == len(ep.Steps)-1 && s.ActionType == pipeline.ActionFinish {
			break
		}
		for _, c := range codes {
			bad := false
			switch c {
			case MaskInvalidAction:
				bad = s.ActionType == pipeline.ActionInvalid
			case MaskRepeatedSearch:
				bad = repeated
			case MaskErrorObservation:
				bad = env.Failed(s.Observation)
			}
			if bad {
				out = append(out, pipeline.MaskedStep{Step: i + 1, Code: c})
				break
			}
		}
	}
	return out
}

// remask returns the record of line with its masked_steps set to masks (none: removed),
// encoded again as json.Marshal writes records.
func remask(line []byte, masks []pipeline.MaskedStep) ([]byte, error) {
	var ep pipeline.Episode
	if err := json.Unmarshal(line, &ep); err != nil {
		return nil, fmt.Errorf("filter: mask steps: %w", err)
	}
	ep.MaskedSteps = masks
	b, err := json.Marshal(ep)
	if err != nil {
		return nil, fmt.Errorf("filter: mask steps of %s: %w", ep.ID, err)
	}
	return b, nil
}
