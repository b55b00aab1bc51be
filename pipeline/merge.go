package pipeline

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/safefile"
)

// ShardKey is the result key of a shard's run: the only one in which the shards of one
// run may differ.
const ShardKey = "task.shard"

// StageMerge is the name the manifest records `reactgen merge` under.
const StageMerge = "merge"

// ShardInput is one shard a merged run was made of, pinned by the hashes of its manifest
// and its episode log.
type ShardInput struct {
	Path             string  `json:"path"`
	Shard            string  `json:"shard"` // i/n
	RunID            string  `json:"run_id"`
	ManifestSHA256   string  `json:"manifest_sha256"`
	EpisodesSHA256   string  `json:"episodes_sha256"`
	Episodes         int     `json:"episodes"` // effective episodes (the last record of each id)
	Correct          int     `json:"correct"`
	Inputs           []Input `json:"inputs"` // what the shard read
	GenerateStatus   string  `json:"generate_status"`
	GenerateRequests int     `json:"generate_requests,omitempty"`
}

// MergeOptions tune Merge.
type MergeOptions struct {
	// TargetCorrect, when positive, caps the merged run at this many correct episodes:
	// questions are taken in the order of their shard hash (ShardOrder), and the episodes
	// of the questions after the one that brought the count to TargetCorrect are left out.
	TargetCorrect int
	Version       string // reactgen's version, for the manifest
}

// MergeSummary is what Merge did.
type MergeSummary struct {
	Shards, Episodes, Correct, Dropped int
}

// Merge combines the run directories of the n shards of one run into a new run directory
// out: the effective episodes of every shard (the last record of each id), in id order,
// exactly as one unsharded run would hold them (same ids, none twice), and one manifest
// that records each shard's inputs and the hashes of its manifest and episode log. It
// refuses shards whose result keys differ in anything but the shard, a set that is not
// the n shards 0..n-1 of n exactly once, shards whose generate stage did not finish, an
// episode id found in two shards, and an out that holds a run already. A failed merge
// leaves no run in out. Filter and export then run on out as on any run.
func Merge(ctx context.Context, out string, shards []string, o MergeOptions) (MergeSummary, error) {
	var sum MergeSummary
	if len(shards) == 0 {
		return sum, &InputError{Err: errors.New("merge: name the shard run directories")}
	}
	ms, err := readManifests(shards)
	if err != nil {
		return sum, err
	}
	seed, err := checkShards(shards, ms)
	if err != nil {
		return sum, err
	}
	if err := checkMergeOut(out); err != nil {
		return sum, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return sum, err
	}
	lock, err := AcquireLock(out, "merge")
	if err != nil {
		return sum, err
	}
	defer lock.Release()
	// What a killed merge into out left: its episode log and manifest being written.
	atomicfile.RemoveStale(out, []string{EpisodesFile, ManifestFile}, nil)

	inputs := make([]ShardInput, len(shards))
	for i, dir := range shards {
		in, err := describeShard(dir, ms[i])
		if err != nil {
			return sum, err
		}
		inputs[i] = in
	}
	started := time.Now().UTC()
	keep := func(string) bool { return true }
	if o.TargetCorrect > 0 {
		if keep, err = capQuestions(shards, seed, o.TargetCorrect); err != nil {
			return sum, err
		}
	}
	w, err := CreateJSONL(RunDir{Path: out}.File(EpisodesFile))
	if err != nil {
		return sum, err
	}
	defer w.Abort()
	err = mergeSorted(ctx, shards, func(dir string, rec EpisodeLine) error {
		if !keep(rec.Episode.QuestionID) {
			sum.Dropped++
			return nil
		}
		sum.Episodes++
		if rec.Episode.Correct {
			sum.Correct++
		}
		return w.WriteLine(rec.Line)
	})
	if err != nil {
		return sum, err
	}
	if err := w.Commit(); err != nil {
		return sum, err
	}

	sum.Shards = len(shards)
	m := mergedManifest(ms, inputs, o, started, sum)
	if err := m.Write(out); err != nil {
		os.Remove(RunDir{Path: out}.File(EpisodesFile))
		return sum, err
	}
	return sum, nil
}

// readManifests reads the manifest of each shard run directory.
func readManifests(shards []string) ([]*Manifest, error) {
	ms := make([]*Manifest, len(shards))
	for i, dir := range shards {
		m, err := ReadManifest(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil, noRun(dir)
		}
		if err != nil {
			return nil, &InputError{Err: err}
		}
		ms[i] = m
	}
	return ms, nil
}

// checkMergeOut checks that out can become a new run directory: a usable path, no
// links out of it, no run in it yet.
func checkMergeOut(out string) error {
	if err := checkPath(out); err != nil {
		return err
	}
	if err := (RunDir{Path: out}).CheckLinks(); err != nil {
		return err
	}
	if (RunDir{Path: out}).Exists() {
		return &InputError{Err: fmt.Errorf("%s already holds a run; merge into a new directory", out)}
	}
	return (RunDir{Path: out}).checkNew()
}

// mergedManifest is the merged run's manifest: the first shard's config and results
// without the shard, every shard's inputs, endpoints and record, and the merge stage.
func mergedManifest(ms []*Manifest, inputs []ShardInput, o MergeOptions, started time.Time, sum MergeSummary) *Manifest {
	first := ms[0]
	m := newManifest(first.RunID)
	m.Version = o.Version
	m.Config = maps.Clone(first.Config)
	if task, ok := m.Config["task"].(map[string]any); ok {
		task = maps.Clone(task)
		task["shard"] = ""
		m.Config["task"] = task
	}
	m.Results = maps.Clone(first.Results)
	delete(m.Results, ShardKey)
	m.Inputs = mergedInputs(ms)
	m.Shards = inputs
	counts := Counts{"shards": len(ms), "episodes": sum.Episodes, "correct": sum.Correct, "dropped": sum.Dropped}
	m.Stages[StageMerge] = &StageRecord{Status: StatusDone, Started: started, Ended: time.Now().UTC(), Counts: counts}
	for _, s := range ms {
		m.AddEndpoints(s.Endpoints)
	}
	return m
}

// checkShards checks that ms are the n shards of one run and returns its seed.
func checkShards(dirs []string, ms []*Manifest) (int64, error) {
	base := ms[0].Results
	var n int
	seen := map[int]string{}
	for i, m := range ms {
		sh, err := ParseShard(m.Results[ShardKey])
		if err != nil || sh.Count == 0 {
			return 0, &InputError{Err: fmt.Errorf("%s is not a shard (its run has no task.shard; generate it with --shard i/n)", dirs[i])}
		}
		if i == 0 {
			n = sh.Count
		}
		if sh.Count != n {
			return 0, &InputError{Err: fmt.Errorf("%s is shard %s, but %s is of %d shards", dirs[i], sh, dirs[0], n)}
		}
		if prev, dup := seen[sh.Index]; dup {
			return 0, &InputError{Err: fmt.Errorf("%s and %s are both shard %s", prev, dirs[i], sh)}
		}
		seen[sh.Index] = dirs[i]
		a, b := maps.Clone(base), maps.Clone(m.Results)
		delete(a, ShardKey)
		delete(b, ShardKey)
		if diff := CompareResults(a, b); len(diff) > 0 {
			var parts []string
			for _, d := range diff {
				parts = append(parts, fmt.Sprintf("%s: %q in %s, %q in %s", d.Key, short(d.Was), dirs[0], short(d.Now), dirs[i]))
			}
			return 0, &InputError{Err: fmt.Errorf("%s was made with other settings than %s, so their episodes would not be one run's:\n  %s",
				dirs[i], dirs[0], strings.Join(parts, "\n  "))}
		}
		st, ok := m.Stages[StageGenerate]
		if !ok || st.Status != StatusDone {
			status := "not run"
			if ok {
				status = st.Status
			}
			return 0, &InputError{Err: fmt.Errorf("%s: its generate stage is %s; resume it (reactgen generate --shard %s) before merging", dirs[i], status, sh)}
		}
	}
	var missing []string
	for i := range n {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return 0, &InputError{Err: fmt.Errorf("merge: shards %s are missing", strings.Join(missing, ", "))}
	}
	seed, err := strconv.ParseInt(base["generate.seed"], 10, 64)
	if err != nil {
		return 0, &InputError{Err: fmt.Errorf("%s: result key generate.seed %q is not a number", dirs[0], base["generate.seed"])}
	}
	return seed, nil
}

// describeShard pins one shard by its files' hashes and counts its effective episodes.
func describeShard(dir string, m *Manifest) (ShardInput, error) {
	rd := RunDir{Path: dir}
	in := ShardInput{Path: dir, Shard: m.Results[ShardKey], RunID: m.RunID, Inputs: m.Inputs,
		GenerateStatus: m.Stages[StageGenerate].Status, GenerateRequests: m.Stages[StageGenerate].Counts["requests"]}
	var err error
	if in.ManifestSHA256, err = fileSHA256(rd.File(ManifestFile)); err != nil {
		return in, err
	}
	if in.EpisodesSHA256, err = fileSHA256(rd.File(EpisodesFile)); err != nil {
		return in, err
	}
	for rec, err := range ReadEpisodeLines(rd.File(EpisodesFile), true) {
		if err != nil {
			return in, err
		}
		in.Episodes++
		if rec.Episode.Correct {
			in.Correct++
		}
	}
	return in, nil
}

func fileSHA256(path string) (string, error) {
	f, err := safefile.OpenPath(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// mergedInputs is the shards' inputs, each file once (by role and hash: the shards may
// have read it from different paths).
func mergedInputs(ms []*Manifest) []Input {
	var out []Input
	seen := map[string]bool{}
	for _, m := range ms {
		for _, in := range m.Inputs {
			k := in.Role + "\x00" + in.SHA256
			if !seen[k] {
				seen[k] = true
				out = append(out, in)
			}
		}
	}
	return out
}

// mergeSorted streams the effective episodes of every shard in id order (each shard's
// log already yields them so), refusing an id that two shards hold.
func mergeSorted(ctx context.Context, dirs []string, emit func(dir string, rec EpisodeLine) error) error {
	type head struct {
		next func() (EpisodeLine, error, bool)
		stop func()
		rec  EpisodeLine
		ok   bool
	}
	heads := make([]*head, len(dirs))
	advance := func(h *head, dir string) error {
		rec, err, ok := h.next()
		if err != nil {
			return err
		}
		// Line is valid only until the next record: keep a copy while the head waits.
		rec.Line = slices.Clone(rec.Line)
		h.rec, h.ok = rec, ok
		return nil
	}
	for i, dir := range dirs {
		next, stop := iter.Pull2(ReadEpisodeLines(RunDir{Path: dir}.File(EpisodesFile), true))
		h := &head{next: next, stop: stop}
		defer stop()
		heads[i] = h
		if err := advance(h, dir); err != nil {
			return err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		best := -1
		for i, h := range heads {
			if h.ok && (best < 0 || h.rec.Episode.ID < heads[best].rec.Episode.ID) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		for i, h := range heads {
			if i != best && h.ok && h.rec.Episode.ID == heads[best].rec.Episode.ID {
				return &InputError{Err: fmt.Errorf("episode %s (question %s) is in both %s and %s: the shards overlap",
					h.rec.Episode.ID, h.rec.Episode.QuestionID, dirs[best], dirs[i])}
			}
		}
		if err := emit(dirs[best], heads[best].rec); err != nil {
			return err
		}
		if err := advance(heads[best], dirs[best]); err != nil {
			return err
		}
	}
}

// ShardOrder sorts question ids the way a merge with a target_correct cap takes them: by
// their shard hash under seed, then by id.
func ShardOrder(seed int64, ids []string) {
	sort.Slice(ids, func(i, j int) bool {
		hi, hj := shardHash(seed, ids[i]), shardHash(seed, ids[j])
		return cmp.Or(cmp.Compare(hi, hj), strings.Compare(ids[i], ids[j])) < 0
	})
}

// capQuestions returns which questions a merge capped at target correct episodes keeps:
// the questions in ShardOrder up to and including the one whose episodes bring the count
// of correct episodes to target.
func capQuestions(dirs []string, seed int64, target int) (func(string) bool, error) {
	correct := map[string]int{}
	for _, dir := range dirs {
		for rec, err := range ReadEpisodeLines(RunDir{Path: dir}.File(EpisodesFile), true) {
			if err != nil {
				return nil, err
			}
			if _, ok := correct[rec.Episode.QuestionID]; !ok {
				correct[rec.Episode.QuestionID] = 0
			}
			if rec.Episode.Correct {
				correct[rec.Episode.QuestionID]++
			}
		}
	}
	ids := slices.Collect(maps.Keys(correct))
	ShardOrder(seed, ids)
	kept := map[string]bool{}
	n := 0
	for _, id := range ids {
		if n >= target {
			break
		}
		kept[id] = true
		n += correct[id]
	}
	return func(id string) bool { return kept[id] }, nil
}
