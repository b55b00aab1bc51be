package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/jsonltest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

// The paper's 500 FEVER transcripts (text-davinci-002 against live Wikipedia, printed by
// the official FEVER notebook) and the page intros their searches returned.
const (
	transcriptsFile = "react-transcripts/fever_dev_react_text-davinci-002.jsonl"
	introsFile      = "react-transcripts/wiki_intros_from_fever_transcripts.jsonl"
)

// scrapePrefix is the line of Wikipedia's page furniture that the notebook's scrape read
// as the first paragraph of most pages; the stored intros do not hold it.
const scrapePrefix = "Pages for logged out editors learn more. "

// recordedStep is one step of a transcript: the action as the notebook held it (before
// it lower-cased the first letter) and the observation it printed.
type recordedStep struct {
	action, observation string
	last                bool // the transcript's final step: its trailing newlines were stripped
}

// parseTranscript reads the steps of a transcript as the notebook printed them: for step
// i, "Action i: <action>\nObservation i: <observation>\n", then print's newline, then
// "Thought i+1: ...". A completion the notebook could not split is printed between two
// steps as "ohh... <completion>\n"; it is not part of the observation before it.
func parseTranscript(t string) ([]recordedStep, error) {
	var out []recordedStep
	for i := 1; ; i++ {
		act := "\nAction " + strconv.Itoa(i) + ": "
		obs := "\nObservation " + strconv.Itoa(i) + ": "
		a := strings.Index(t, act)
		if a < 0 {
			return out, nil
		}
		o := strings.Index(t[a:], obs)
		if o < 0 {
			return nil, fmt.Errorf("step %d: action without observation", i)
		}
		o += a
		step := recordedStep{action: t[a+len(act) : o]}
		rest := t[o+len(obs):]
		next := strings.Index(rest, "\nThought "+strconv.Itoa(i+1)+": ")
		if next < 0 {
			step.observation, step.last = rest, true
			return append(out, step), nil
		}
		seg := rest[:next]
		if k := strings.Index(seg, "\n\nohh... "); k >= 0 {
			seg = seg[:k]
		} else if !strings.HasSuffix(seg, "\n") {
			return nil, fmt.Errorf("step %d: observation %q does not end as printed", i, seg)
		} else {
			seg = seg[:len(seg)-1] // print's newline
		}
		step.observation = seg
		out = append(out, step)
		t = rest[next:]
	}
}

// The differences the replay allows: each is the live page itself, which the stored
// intros cannot reproduce. Anything else fails the test.
const (
	diffPrefix   = "scrape prefix"                     // the recorded observation starts with scrapePrefix
	diffIntroEnd = "intro end (the live page went on)" // text beyond the stored intro: its last full stop
	diffSimilar  = "similar list"                      // Similar: lists come from a search engine
	diffBeyond   = "lookup beyond the intro"           // a Lookup found sentences past the stored intro
)

var (
	missRe   = regexp.MustCompile(`(?s)^Could not find (.*)\. Similar: \[.*\]\.$`)
	resultRe = regexp.MustCompile(`(?s)^\(Result (\d+) / (\d+)\) (.*)$`)
)

// explain returns the allowed differences that turn ours into recorded, or ok false.
// intro is the stored intro of the page the episode is on ("" for none).
//
//   - scrape prefix: recorded is scrapePrefix followed by the rest of the comparison.
//   - intro end: the rest of recorded is the stored intro and ours is that with one more
//     full stop at its very end. The stored intro is the recorded observation's text,
//     which ends at a sentence that the live page continued ("… Group. The band …"); in
//     the stored text that sentence ends the paragraph, and paper splitting gives a
//     paragraph's last sentence its own full stop after the one it has.
//   - similar list: both are misses of the same entity, written alike, whose lists of
//     similar titles differ.
//   - beyond the intro: recorded is Lookup result k of n; ours is result k of m < n with
//     the same sentence (intro end allowed), or, when k > m, No more results and the
//     recorded sentence is not in the stored intro.
func explain(ours, recorded, intro string) (diffs []string, ok bool) {
	if strings.HasPrefix(recorded, scrapePrefix) && !strings.HasPrefix(ours, scrapePrefix) {
		recorded, diffs = recorded[len(scrapePrefix):], append(diffs, diffPrefix)
	}
	if ours == recorded {
		return diffs, true
	}
	if recorded == intro && ours == intro+"." {
		return append(diffs, diffIntroEnd), true
	}
	if mo, mr := missRe.FindStringSubmatch(ours), missRe.FindStringSubmatch(recorded); mo != nil && mr != nil && mo[1] == mr[1] {
		return append(diffs, diffSimilar), true
	}
	r := resultRe.FindStringSubmatch(recorded)
	if r == nil {
		return nil, false
	}
	k, _ := strconv.Atoi(r[1])
	n, _ := strconv.Atoi(r[2])
	if o := resultRe.FindStringSubmatch(ours); o != nil {
		ko, _ := strconv.Atoi(o[1])
		m, _ := strconv.Atoi(o[2])
		switch {
		case ko != k || m >= n:
			return nil, false
		case o[3] == r[3]:
			return append(diffs, diffBeyond), true
		case o[3] == r[3]+"." && strings.HasSuffix(intro, r[3]):
			return append(diffs, diffBeyond, diffIntroEnd), true
		}
		return nil, false
	}
	if ours == env.PaperNoMoreResults && !strings.Contains(intro, strings.TrimSuffix(r[3], ".")) {
		return append(diffs, diffBeyond), true
	}
	return nil, false
}

// TestReplayPaperFEVERTranscripts replays every action of the paper's 500 FEVER
// transcripts through `reactgen env` in paper mode, over an index of the intros those
// transcripts' searches returned, and requires each observation to be the recorded one
// or to differ from it only by the live page (explain). The index also holds, for each
// entity that the transcripts show Wikipedia answered with a disambiguation page (the
// notebook searched again for "[X]"), a page of that kind, written here: the intros hold
// only pages that were shown.
func TestReplayPaperFEVERTranscripts(t *testing.T) {
	transcripts := shareddata.Path(t, transcriptsFile)
	intros := shareddata.Path(t, introsFile)
	type transcript struct {
		QuestionIdx int    `json:"question_idx"`
		Transcript  string `json:"transcript"`
		Gold        string `json:"gt_answer"`
	}
	var all []transcript
	jsonltest.Each(t, transcripts, func(_ int, tr transcript) { all = append(all, tr) })
	introOf := map[string]string{} // normalised title -> text, the first of a title as Build keeps it
	jsonltest.Each(t, intros, func(_ int, p struct{ Title, Text string }) {
		if _, dup := introOf[env.NormalizeTitle(p.Title)]; !dup {
			introOf[env.NormalizeTitle(p.Title)] = p.Text
		}
	})

	// The disambiguation pages: "Could not find [X]" is the notebook's re-search of X.
	var stubs strings.Builder
	seen := map[string]bool{}
	parsed := make([][]recordedStep, len(all))
	for i, tr := range all {
		steps, err := parseTranscript(tr.Transcript)
		if err != nil {
			t.Fatalf("transcript %d (question %d): %v", i, tr.QuestionIdx, err)
		}
		parsed[i] = steps
		for _, s := range steps {
			m := missRe.FindStringSubmatch(s.observation)
			if m == nil || !strings.HasPrefix(m[1], "[") || !strings.HasSuffix(m[1], "]") {
				continue
			}
			x := m[1][1 : len(m[1])-1]
			if _, shown := introOf[env.NormalizeTitle(x)]; shown || seen[env.NormalizeTitle(x)] {
				continue
			}
			seen[env.NormalizeTitle(x)] = true
			b, _ := json.Marshal(map[string]string{"title": x, "text": x + " may refer to:"})
			stubs.Write(b)
			stubs.WriteByte('\n')
		}
	}
	dir := t.TempDir()
	stubFile := filepath.Join(dir, "disambiguation.jsonl")
	if err := os.WriteFile(stubFile, []byte(stubs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ixDir := filepath.Join(dir, "index")
	if _, err := index.Build(t.Context(), ixDir, []string{intros, stubFile}, index.BuildOptions{}); err != nil {
		t.Fatal(err)
	}

	counts := map[string]int{}
	kinds := map[string][2]int{} // kind of recorded observation -> exact, allowed
	exact, exactStripped, allowed, total := 0, 0, 0, 0
	for i, tr := range all {
		steps := parsed[i]
		var in strings.Builder
		for _, s := range steps {
			b, _ := json.Marshal(s.action)
			in.Write(b)
			in.WriteByte('\n')
		}
		res := invoke(t, in.String(), nil, "env", "--index", ixDir, "--task", "fever", "--observations", "paper",
			"--actions", "paper", "--gold", tr.Gold, "--json")
		if res.code != 0 {
			t.Fatalf("question %d: env exit %d: %s", tr.QuestionIdx, res.code, res.stderr)
		}
		lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
		if len(lines) != len(steps) {
			t.Errorf("question %d: %d observations for %d recorded steps", tr.QuestionIdx, len(lines), len(steps))
			continue
		}
		page := "" // the stored intro of the page the episode is on
		for j, s := range steps {
			var got env.ServeLine
			if err := json.Unmarshal([]byte(lines[j]), &got); err != nil {
				t.Fatalf("question %d step %d: %v", tr.QuestionIdx, j+1, err)
			}
			ours := got.Observation
			if s.last {
				ours = strings.TrimRight(ours, "\n") // as the transcript's final strip left it
			}
			total++
			a := env.ParsePaperAction(s.action)
			if intro, ok := introOf[env.NormalizeTitle(a.Argument)]; ok && a.Type == pipeline.ActionSearch && !strings.HasPrefix(ours, "Could not find") {
				page = intro
			}
			kind := kindOf(s.observation)
			tally := kinds[kind]
			switch diffs, ok := explain(ours, s.observation, page); {
			case ours == s.observation && ours != got.Observation:
				exactStripped++
				fallthrough
			case ours == s.observation:
				exact++
				tally[0]++
			case ok:
				allowed++
				tally[1]++
				counts[strings.Join(diffs, " + ")]++
			default:
				t.Errorf("question %d step %d %q:\n got %q\nwant %q", tr.QuestionIdx, j+1, s.action, ours, s.observation)
			}
			kinds[kind] = tally
		}
	}
	t.Logf("%d transcripts, %d observations: %d exactly as recorded (%d of them final observations, whose trailing newline the transcript's strip removed), %d differing only by the live page, %d otherwise",
		len(all), total, exact, exactStripped, allowed, total-exact-allowed)
	t.Logf("index: %d intros, %d disambiguation pages written for the searches Wikipedia answered with one", len(introOf), len(seen))
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		t.Logf("  %s: %d exact, %d allowed", k, kinds[k][0], kinds[k][1])
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		t.Logf("  allowed: %s: %d", k, counts[k])
	}
	if len(all) != 500 || total == 0 {
		t.Errorf("replayed %d transcripts and %d observations, want the 500 transcripts", len(all), total)
	}
}

// kindOf names the kind of a recorded observation, for the counts.
func kindOf(obs string) string {
	for _, k := range []struct{ prefix, kind string }{
		{"Could not find ", "failed search"}, {"(Result ", "lookup result"}, {"No more results.", "no more results"},
		{"Episode finished", "finish"}, {"Invalid action", "invalid action"},
	} {
		if strings.HasPrefix(obs, k.prefix) {
			return k.kind
		}
	}
	return "page"
}
