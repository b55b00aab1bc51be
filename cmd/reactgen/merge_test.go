package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// normalized is an episode's JSON with the wall-clock fields zeroed: what must be equal
// between two runs of the expert policy.
func normalized(t *testing.T, ep pipeline.Episode) string {
	t.Helper()
	ep.LatencyMS = 0
	for i := range ep.Steps {
		for j := range ep.Steps[i].Calls {
			ep.Steps[i].Calls[j].LatencyMS = 0
		}
	}
	b, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func episodesOf(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for ep, err := range pipeline.ReadEpisodes(path) {
		if err != nil {
			t.Fatal(err)
		}
		out[ep.ID] = normalized(t, ep)
	}
	return out
}

// shardRuns generates the demo in n shards against the demo run's index.
func shardRuns(t *testing.T, dir, index string, n int, sets ...string) []string {
	t.Helper()
	var dirs []string
	for i := range n {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		args := []string{"generate", "--config", "../../configs/demo.yaml", "--out", out, "--shard", fmt.Sprintf("%d/%d", i, n),
			"--set", "corpus.index=" + index, "--set", "generate.progress=off"}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		if res := invoke(t, "", nil, args...); res.code != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, res.code, res.stderr)
		}
		dirs = append(dirs, out)
	}
	return dirs
}

func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	demo, _ := demoRun(t)
	dir := t.TempDir()
	shards := shardRuns(t, dir, filepath.Join(demo, pipeline.IndexDir), 4)
	want := episodesOf(t, filepath.Join(demo, pipeline.EpisodesFile))
	total := 0
	for _, s := range shards {
		n := len(episodesOf(t, filepath.Join(s, pipeline.EpisodesFile)))
		if n == 0 || n == len(want) {
			t.Errorf("%s holds %d of %d episodes: want a proper slice", s, n, len(want))
		}
		total += n
	}
	if total != len(want) {
		t.Errorf("shards hold %d episodes in all, the unsharded run %d", total, len(want))
	}
	out := filepath.Join(dir, "merged")
	res := invoke(t, "", nil, append([]string{"merge", out}, shards...)...)
	if res.code != 0 {
		t.Fatalf("merge: exit %d: %s", res.code, res.stderr)
	}
	got := episodesOf(t, filepath.Join(out, pipeline.EpisodesFile))
	if len(got) != len(want) || countLines(t, filepath.Join(out, pipeline.EpisodesFile)) != len(want) {
		t.Errorf("merged: %d episodes (%d lines), want %d", len(got), countLines(t, filepath.Join(out, pipeline.EpisodesFile)), len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Fatalf("episode %s differs:\n got %s\nwant %s", id, got[id], w)
		}
	}
	m := readManifest(t, out)
	um, _ := pipeline.ReadManifest(demo)
	if m.RunID != um.RunID || len(m.Shards) != 4 || m.Shards[2].Shard != "2/4" || m.Shards[2].EpisodesSHA256 == "" || len(m.Shards[2].Inputs) == 0 {
		t.Errorf("merged manifest: run id %s (unsharded %s), shards %+v", m.RunID, um.RunID, m.Shards)
	}
	if _, ok := m.Results[pipeline.ShardKey]; ok || len(pipeline.CompareResults(um.Results, m.Results)) != 0 {
		t.Errorf("merged result keys %v differ from the unsharded run's %v", m.Results, um.Results)
	}
	// A global cap: questions in shard-hash order until 50 correct episodes.
	capped := filepath.Join(dir, "capped")
	if res := invoke(t, "", nil, append([]string{"merge", "--target-correct", "50", capped}, shards...)...); res.code != 0 {
		t.Fatalf("merge --target-correct: exit %d: %s", res.code, res.stderr)
	}
	correct, byQuestion := 0, map[string]bool{}
	for ep, err := range pipeline.ReadEpisodes(filepath.Join(capped, pipeline.EpisodesFile)) {
		if err != nil {
			t.Fatal(err)
		}
		byQuestion[ep.QuestionID] = true
		if ep.Correct {
			correct++
		}
	}
	var all []string
	for ep, err := range pipeline.ReadEpisodes(filepath.Join(demo, pipeline.EpisodesFile)) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ep.QuestionID)
	}
	pipeline.ShardOrder(1, all)
	if correct < 50 || correct > 51 || len(byQuestion) >= len(all) {
		t.Errorf("capped merge: %d correct over %d questions (of %d)", correct, len(byQuestion), len(all))
	}
	for i, id := range all {
		if byQuestion[id] != (i < len(byQuestion)) {
			t.Fatalf("capped merge: question %d in shard-hash order (%s) kept %v: want a prefix of that order", i, id, byQuestion[id])
		}
	}

	// Filter and export run on the merged run as on any other, and keep what the
	// unsharded run kept.
	for _, stage := range []string{"filter", "export"} {
		if res := invoke(t, "", nil, stage, "--config", "../../configs/demo.yaml", "--out", out); res.code != 0 {
			t.Fatalf("%s on the merged run: exit %d: %s", stage, res.code, res.stderr)
		}
	}
	if a, b := keptIDs(t, out), keptIDs(t, demo); !slices.Equal(a, b) {
		t.Errorf("kept: %d episodes after the merge, %d unsharded", len(a), len(b))
	}
}

func keptIDs(t *testing.T, dir string) []string {
	t.Helper()
	var ids []string
	for ep, err := range pipeline.ReadKept(filepath.Join(dir, pipeline.KeptFile)) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ep.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestMergeRefuses(t *testing.T) {
	demo, _ := demoRun(t)
	dir := t.TempDir()
	index := filepath.Join(demo, pipeline.IndexDir)
	shards := shardRuns(t, dir, index, 2)
	other := shardRuns(t, filepath.Join(dir, "other"), index, 2, "env.sentences=3")
	tests := []struct {
		name   string
		shards []string
		want   string
	}{
		{"other settings", []string{shards[0], other[1]}, "env.sentences"},
		{"missing shard", shards[:1], "shards 1/2 are missing"},
		{"same shard twice", []string{shards[0], shards[0], shards[1]}, "are both shard 0/2"},
		{"not a shard", []string{demo, shards[1]}, "is not a shard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(tt.name, " ", "-"))
			res := invoke(t, "", nil, append([]string{"merge", out}, tt.shards...)...)
			if res.code != 2 || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q: want 2 and %q", res.code, res.stderr, tt.want)
			}
			if _, err := os.Stat(filepath.Join(out, pipeline.ManifestFile)); err == nil {
				t.Errorf("a refused merge left a manifest in %s", out)
			}
		})
	}
	// A resumed shard must be the same shard.
	res := invoke(t, "", nil, "generate", "--config", "../../configs/demo.yaml", "--out", shards[0], "--shard", "1/2",
		"--set", "corpus.index="+index, "--set", "generate.progress=off")
	if res.code != 2 || !strings.Contains(res.stderr, "task.shard") {
		t.Errorf("resuming shard 0/2 as 1/2: exit %d, %q", res.code, res.stderr)
	}
}

func TestShardFromIndexedJobEnvironment(t *testing.T) {
	demo, _ := demoRun(t)
	dir := t.TempDir()
	args := []string{"generate", "--config", "../../configs/demo.yaml", "--out", filepath.Join(dir, "run"),
		"--set", "corpus.index=" + filepath.Join(demo, pipeline.IndexDir), "--set", "generate.progress=off"}
	res := invoke(t, "", map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "4"}, args...)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	m, err := pipeline.ReadManifest(filepath.Join(dir, "run"))
	if err != nil || m.Results[pipeline.ShardKey] != "3/4" {
		t.Errorf("shard from the environment: %v, %v", m.Results[pipeline.ShardKey], err)
	}
	res = invoke(t, "", map[string]string{"JOB_COMPLETION_INDEX": "3"}, append(args[:4:4], filepath.Join(dir, "run2"))...)
	if res.code != 2 || !strings.Contains(res.stderr, "JOB_COMPLETIONS") {
		t.Errorf("index without completions: exit %d, %q", res.code, res.stderr)
	}
}

// What a killed merge and a killed eval leave (their hidden temporary files) the next
// merge into the same directory and the next eval of the run remove.
func TestMergeAndEvalRemoveWhatKilledOnesLeft(t *testing.T) {
	demo, _ := demoRun(t)
	dir := t.TempDir()
	shards := shardRuns(t, dir, filepath.Join(demo, pipeline.IndexDir), 2)
	out := filepath.Join(dir, "merged")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	left := []string{filepath.Join(out, ".episodes.jsonl.tmp-1234"), filepath.Join(out, ".manifest.json.tmp-99")}
	for _, p := range left {
		if err := os.WriteFile(p, []byte(`{"half":`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res := invoke(t, "", nil, append([]string{"merge", out}, shards...)...); res.code != 0 {
		t.Fatalf("merge: exit %d: %s", res.code, res.stderr)
	}
	run := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(run, os.DirFS(demo)); err != nil {
		t.Fatal(err)
	}
	evalLeft := filepath.Join(run, ".eval.json.tmp-77")
	if err := os.WriteFile(evalLeft, []byte(`{"ha`), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := invoke(t, "", nil, "eval", "--config", "../../configs/demo.yaml", "--out", run); res.code != 0 {
		t.Fatalf("eval: exit %d: %s", res.code, res.stderr)
	}
	for _, p := range append(left, evalLeft) {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
}
