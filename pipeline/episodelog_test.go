package pipeline_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

func TestEpisodeLogTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), pipeline.EpisodesFile)
	l, _, _, err := pipeline.OpenEpisodeLog(path, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []pipeline.Episode{episodetest.Outcome("q1", 0, pipeline.StopFinished, true), episodetest.Outcome("q2", 0, pipeline.StopMaxSteps, false)} {
		if err := l.Write(t.Context(), ep); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	// A crash in the middle of the third write leaves half a line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"schema":1,"id":"abc","question_id":"q3","st`)
	f.Close()

	l, state, rec, err := pipeline.OpenEpisodeLog(path, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rec.Records != 2 || rec.TornBytes == 0 {
		t.Errorf("recovery: got %+v, want 2 records and a torn line", rec)
	}
	if !state.Done["q1#0"] || !state.Done["q2#0"] || state.Correct != 1 {
		t.Errorf("state: got %+v", state)
	}
	if err := l.Write(t.Context(), episodetest.Outcome("q3", 0, pipeline.StopFinished, true)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for ep, err := range pipeline.ReadEpisodes(path) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ep.QuestionID)
	}
	sort.Strings(ids)
	if got := strings.Join(ids, ","); got != "q1,q2,q3" {
		t.Errorf("episodes after recovery: got %s, want q1,q2,q3", got)
	}
}

func TestEpisodeLogRetryableSuperseded(t *testing.T) {
	path := filepath.Join(t.TempDir(), pipeline.EpisodesFile)
	l, _, _, err := pipeline.OpenEpisodeLog(path, 4, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(t.Context(), episodetest.Outcome("q1", 0, pipeline.StopError, false))
	l.Write(t.Context(), episodetest.Outcome("q2", 0, pipeline.StopInterrupted, false))
	l.Close()
	l, state, _, err := pipeline.OpenEpisodeLog(path, 4, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Done) != 0 || state.Retry != 2 {
		t.Errorf("retryable records must not count as done: got %+v", state)
	}
	l.Write(t.Context(), episodetest.Outcome("q1", 0, pipeline.StopFinished, true))
	l.Close()
	n := 0
	for ep, err := range pipeline.ReadEpisodes(path) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ep.QuestionID == "q1" && ep.StopReason != pipeline.StopFinished {
			t.Errorf("q1: got the superseded record %q", ep.StopReason)
		}
	}
	if n != 2 {
		t.Errorf("effective episodes: got %d, want 2 (one per id)", n)
	}
}

func TestEpisodeLogMalformedMiddleLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), pipeline.EpisodesFile)
	os.WriteFile(path, []byte("{\"id\":\"a\",\"question_id\":\"q\"}\nnot json\n{\"id\":\"b\",\"question_id\":\"r\"}\n"), 0o644)
	_, _, _, err := pipeline.OpenEpisodeLog(path, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("got %v, want an error naming line 2", err)
	}
}

func TestLockHeldAndStale(t *testing.T) {
	dir := t.TempDir()
	l, err := pipeline.AcquireLock(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	// flock is per open file description, so a second open in this process conflicts too.
	if _, err := pipeline.AcquireLock(dir, "second"); err == nil {
		t.Fatal("second lock: got nil error, want the run directory in use")
	} else if !strings.Contains(err.Error(), "in use by pid") {
		t.Errorf("second lock: got %v, want a message naming the holder", err)
	}
	l.Release()

	// A lock left by a process that died is taken over.
	cmd := exec.Command("sh", "-c", "exec 9>>"+filepath.Join(dir, pipeline.LockFile)+"; flock -n 9 && echo '{\"pid\":99999}' >&9")
	if err := cmd.Run(); err != nil {
		t.Skipf("flock(1) unavailable: %v", err)
	}
	l2, err := pipeline.AcquireLock(dir, "third")
	if err != nil {
		t.Fatalf("stale lock was not taken over: %v", err)
	}
	l2.Release()
}

func TestWriteFileAtomicFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	os.WriteFile(path, []byte("old"), 0o644)
	err := atomicfile.WriteFile(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("got nil error, want the writer's error")
	}
	b, _ := os.ReadFile(path)
	if string(b) != "old" {
		t.Errorf("file after failed write: got %q, want %q", b, "old")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %d entries", len(entries))
	}
}

func TestReadEpisodesOrderIsIndependentOfCompletionOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, order []string) string {
		path := filepath.Join(dir, name)
		l, _, _, err := pipeline.OpenEpisodeLog(path, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range order {
			l.Write(t.Context(), episodetest.Outcome(q, 0, pipeline.StopFinished, true))
		}
		l.Close()
		return path
	}
	read := func(path string) string {
		var ids []string
		for ep, err := range pipeline.ReadEpisodes(path) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ep.ID)
		}
		return strings.Join(ids, ",")
	}
	a := read(write("a.jsonl", []string{"q1", "q2", "q3", "q4"}))
	b := read(write("b.jsonl", []string{"q4", "q2", "q1", "q3"}))
	if a != b || strings.Count(a, ",") != 3 {
		t.Errorf("order depends on completion order:\n%s\n%s", a, b)
	}
}

// Concurrent Writes with an fsync for every record share fsyncs (group commit); every
// Write that returned has its whole line in the file before Close, and none after it.
func TestEpisodeLogConcurrentWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), pipeline.EpisodesFile)
	l, _, _, err := pipeline.OpenEpisodeLog(path, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 32, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := l.Write(t.Context(), episodetest.Outcome(fmt.Sprintf("q%d-%d", w, i), 0, pipeline.StopFinished, true)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for _, err := range pipeline.ReadEpisodes(path) { // before Close: what Write returned is in the file
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != writers*each || l.Count() != writers*each {
		t.Errorf("records before close: read %d, counted %d, want %d", n, l.Count(), writers*each)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(t.Context(), episodetest.Outcome("late", 0, pipeline.StopFinished, true)); err == nil {
		t.Error("a Write after Close succeeded")
	}
	l, state, rec, err := pipeline.OpenEpisodeLog(path, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rec.Records != writers*each || rec.TornBytes != 0 || len(state.Done) != writers*each {
		t.Errorf("reopened: %+v, %d done", rec, len(state.Done))
	}
}
