package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"4/4", "-1/4", "1", "a/b", "0/0", "1/4/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q): got no error", bad)
		}
	}
	if s, err := ParseShard("3/4"); err != nil || s != (Shard{3, 4}) || s.String() != "3/4" {
		t.Errorf("ParseShard(3/4): %+v, %v", s, err)
	}
}

func TestShardsPartitionTheQuestions(t *testing.T) {
	qs := make([]Question, 1000)
	for i := range qs {
		qs[i].ID = fmt.Sprintf("q%d", i)
	}
	seen := map[string]int{}
	for i := range 4 {
		part := Shard{i, 4}.Select(qs, 7)
		if len(part) < 200 || len(part) > 300 {
			t.Errorf("shard %d/4 holds %d of 1000", i, len(part))
		}
		for _, q := range part {
			seen[q.ID]++
		}
	}
	for _, q := range qs {
		if seen[q.ID] != 1 {
			t.Fatalf("question %s is in %d shards, want 1", q.ID, seen[q.ID])
		}
	}
	if other := (Shard{0, 4}).Select(qs, 8); fmt.Sprint(other) == fmt.Sprint(Shard{0, 4}.Select(qs, 7)) {
		t.Errorf("the seed does not change the slice")
	}
}

// TestShardOf: --shard wins over task.shard, which wins over a Kubernetes Indexed Job's
// variables; a bad one is a usage error naming where it came from.
func TestShardOf(t *testing.T) {
	cases := []struct {
		name, flag, task string
		env              map[string]string
		want, wantErr    string
	}{
		{name: "none"},
		{name: "flag", flag: "1/4", task: "0/2", env: map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "8"}, want: "1/4"},
		{name: "task.shard", task: "0/2", env: map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "8"}, want: "0/2"},
		{name: "indexed job", env: map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "8"}, want: "3/8"},
		{name: "bad flag", flag: "4/4", wantErr: "--shard"},
		{name: "no completions", env: map[string]string{"JOB_COMPLETION_INDEX": "3"}, wantErr: "JOB_COMPLETIONS is not set"},
		{name: "bad job", env: map[string]string{"JOB_COMPLETION_INDEX": "9", "JOB_COMPLETIONS": "8"}, wantErr: "JOB_COMPLETION_INDEX / JOB_COMPLETIONS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			cfg.Task.Shard = tc.task
			got, err := ShardOf(tc.flag, &cfg, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !IsBadInput(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got %q, %v; want a usage error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
