package pipeline

import (
	"encoding/json"
	"strings"

	"github.com/reactgen/reactgen/internal/fastjson"
)

// decodeEpisode decodes one line of an episode file (episodes.jsonl, kept.jsonl): the one
// decoding path for episodes. Decoding those files is most of the filter's and the
// export's reading, so it goes through github.com/goccy/go-json, which reads the JSON
// tags as encoding/json does, 3-5x faster on an episode, and measured level with the
// hand-written decoder it replaced (BENCHMARKS.md, "Codecs"): a new Episode field needs
// no edit here.
//
// A line goccy rejects is decoded again by encoding/json, so the error a person reads is
// encoding/json's, and so is the record of a line only encoding/json reads. Every line
// json.Marshal writes decodes to the record encoding/json gives (FuzzDecodeEpisode).
// Lines no writer of reactgen produces may decode more leniently than encoding/json
// would: goccy keeps invalid UTF-8 and raw control characters in strings, reads 1. as a
// number, matches keys in another case only partly, and wraps a 19-digit integer above
// the int64 range.
func decodeEpisode(b []byte, ep *Episode) error {
	if err := decode(b, ep); err != nil {
		return err
	}
	detach(ep)
	return nil
}

// decodeRejected decodes one line of rejected.jsonl through the same path.
func decodeRejected(b []byte, r *Rejected) error {
	if err := decode(b, r); err != nil {
		return err
	}
	detach(&r.Episode)
	return nil
}

// decode is goccy's Unmarshal, then encoding/json's on the lines goccy rejects.
func decode[T any](b []byte, v *T) error {
	if err := fastjson.Unmarshal(b, v); err != nil {
		*v = *new(T)
		return json.Unmarshal(b, v)
	}
	return nil
}

// detach gives the identifiers and names a stage may keep after the record (a filter
// candidate's id, a map key) strings of their own: goccy's strings share one copy of
// the line, which a kept id would otherwise hold in memory whole (docs/bench-export.md,
// step 4: 572 MB of peak RSS instead of 177 MB when ids shared their lines). Names that
// recur are shared.
func detach(ep *Episode) {
	for _, s := range [...]*string{&ep.ID, &ep.RunID, &ep.Task, &ep.QuestionID, &ep.Answer, &ep.QuestionType,
		&ep.Method, &ep.Branch, &ep.Policy, &ep.Format, &ep.StopReason} {
		if name, ok := names[*s]; ok {
			*s = name
		} else {
			*s = strings.Clone(*s)
		}
	}
}

// names are the values of the enumerated fields.
var names = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"", TaskHotpotQA, TaskFEVER, TaskALFWorld, TaskWebShop, ActionThink, LabelSupports, LabelRefutes, LabelNEI,
		StopFinished, StopMaxSteps, StopLoop, StopError, StopBudget, StopInterrupted,
		ActionSearch, ActionLookup, ActionFinish, ActionInvalid,
		"react", "act", "cot", "cot-sc", "standard", "react-cot-sc", "cot-sc-react", "expert", "chat", "completion", "tools",
		"bridge", "comparison", "stop", "length", "tool_calls"} {
		m[s] = s
	}
	return m
}()
