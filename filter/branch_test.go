package filter

import (
	"errors"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

func TestAnsweredBy(t *testing.T) {
	ep := func(method, branch string) pipeline.Episode {
		e := episodetest.Episode("e-"+method+"-"+branch, "q", "Search[A]", "Finish[x]")
		e.Method, e.Branch = method, branch
		return e
	}
	episodes := []struct {
		ep pipeline.Episode
		by string
	}{
		{ep("react", ""), "react"},
		{ep("act", ""), "act"},
		{ep("cot", ""), "cot"},
		{ep("react-cot-sc", "react"), "react"},
		{ep("react-cot-sc", "cot-sc"), "cot-sc"},
		{ep("cot-sc-react", "cot-sc"), "cot-sc"},
		{ep("cot-sc-react", "react"), "react"},
	}
	for _, keep := range [][]string{pipeline.Default().Filter.AnsweredBy, {"cot-sc"}, {"react", "cot-sc"}} {
		chain, err := New(pipeline.FilterConfig{Rules: []string{"answered_by"}, AnsweredBy: keep}, pipeline.TaskHotpotQA, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range episodes {
			want := false
			for _, k := range keep {
				want = want || k == e.by
			}
			rej := chain.judge(&e.ep)
			if got := len(rej) == 0; got != want {
				t.Errorf("answered_by %v, %s/%s: kept %v, want %v (%v)", keep, e.ep.Method, e.ep.Branch, got, want, rej)
			}
			if len(rej) == 1 && (rej[0].Rule != "answered_by" || rej[0].Code != CodeOtherBranch) {
				t.Errorf("reject %+v, want answered_by/%s", rej[0], CodeOtherBranch)
			}
		}
	}
	for _, bad := range [][]string{nil, {"reactt"}} {
		_, err := New(pipeline.FilterConfig{Rules: []string{"answered_by"}, AnsweredBy: bad}, pipeline.TaskHotpotQA, Options{})
		var ce *pipeline.ConfigError
		if !errors.As(err, &ce) || ce.Key != "filter.answered_by" {
			t.Errorf("answered_by %v: got %v, want a config error on filter.answered_by", bad, err)
		}
	}
}
