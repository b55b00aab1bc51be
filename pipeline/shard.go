package pipeline

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is one of Count deterministic slices of a task's questions (task.shard "i/n",
// --shard, or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX / JOB_COMPLETIONS). The
// zero Shard holds every question.
type Shard struct {
	Index, Count int
}

// ShardOf is the shard a generating command runs: flag (--shard), else task.shard,
// else a Kubernetes Indexed Job's JOB_COMPLETION_INDEX of JOB_COMPLETIONS (read through
// getenv), else none (""). A bad one is an *InputError naming where it came from.
func ShardOf(flag string, cfg *Config, getenv func(string) string) (string, error) {
	switch {
	case flag != "":
		if _, err := ParseShard(flag); err != nil {
			return "", &InputError{Err: fmt.Errorf("--shard %w", err)}
		}
		return flag, nil
	case cfg.Task.Shard != "":
		return cfg.Task.Shard, nil
	}
	idx, n := getenv("JOB_COMPLETION_INDEX"), getenv("JOB_COMPLETIONS")
	switch {
	case idx == "":
		return "", nil
	case n == "":
		return "", &InputError{Err: fmt.Errorf("JOB_COMPLETION_INDEX is %s but JOB_COMPLETIONS is not set: set it to the job's completions (see docs/scale.md), or pass --shard", idx)}
	}
	s := idx + "/" + n
	if _, err := ParseShard(s); err != nil {
		return "", &InputError{Err: fmt.Errorf("JOB_COMPLETION_INDEX / JOB_COMPLETIONS: %w", err)}
	}
	return s, nil
}

// ParseShard reads "i/n" with 0 <= i < n; the empty string is the zero Shard.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.Atoi(strings.TrimSpace(is))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("%q is not i/n (e.g. 0/4)", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%q: want 0 <= i < n", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// String is the "i/n" form; empty for the zero Shard.
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Holds reports whether the question with id belongs to s: an FNV-1a hash of the run's
// seed and the id, modulo Count. It depends on nothing else (not the question's
// position), so every shard of a task file agrees on every question, and the n shards
// together hold each question exactly once.
func (s Shard) Holds(seed int64, questionID string) bool {
	if s.Count <= 1 {
		return true
	}
	return int(shardHash(seed, questionID)%uint64(s.Count)) == s.Index
}

func shardHash(seed int64, questionID string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", seed, questionID)
	return h.Sum64()
}

// Select returns the questions s holds, in their order.
func (s Shard) Select(qs []Question, seed int64) []Question {
	if s.Count <= 1 {
		return qs
	}
	var out []Question
	for _, q := range qs {
		if s.Holds(seed, q.ID) {
			out = append(out, q)
		}
	}
	return out
}
