package pipeline

import (
	"fmt"
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
