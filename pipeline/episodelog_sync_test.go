package pipeline

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestEpisodeLogSyncWait: with an fsync for every record, a lone writer gets one fsync
// per Write and never waits; Writes that queue behind an fsync share the next one; once
// an fsync was shared so, the next waits syncWait first; every Write that returned is
// covered by an fsync.
func TestEpisodeLogSyncWait(t *testing.T) {
	l, _, _, err := OpenEpisodeLog(filepath.Join(t.TempDir(), EpisodesFile), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	write := func(id string) {
		t.Helper()
		if err := l.Write(t.Context(), Episode{Schema: SchemaVersion, ID: id, QuestionID: id}); err != nil {
			t.Error(err)
		}
	}
	counts := func() (syncs, waits int, synced, written uint64) {
		l.syncMu.Lock()
		defer l.syncMu.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.syncs, l.waits, l.synced, l.written
	}

	for i := range 20 {
		write(fmt.Sprintf("alone-%d", i))
	}
	if syncs, waits, synced, written := counts(); syncs != 20 || waits != 0 || synced != written {
		t.Fatalf("a lone writer's 20 Writes: %d fsyncs, %d waits, %d of %d lines synced; want 20, 0, all", syncs, waits, synced, written)
	}

	// Eight Writes queue while an fsync is in progress (the test holds its lock): one
	// fsync covers them all.
	const queued = 8
	l.syncMu.Lock()
	var wg sync.WaitGroup
	for i := range queued {
		wg.Go(func() { write(fmt.Sprintf("queued-%d", i)) })
	}
	for {
		l.mu.Lock()
		n := l.wanting
		l.mu.Unlock()
		if n == queued {
			break
		}
		runtime.Gosched()
	}
	l.syncMu.Unlock()
	wg.Wait()
	if syncs, waits, synced, written := counts(); syncs != 21 || waits != 0 || synced != written {
		t.Fatalf("8 queued Writes: %d fsyncs in all, %d waits, %d of %d lines synced; want 21, 0, all", syncs, waits, synced, written)
	}

	l.syncMu.Lock()
	sharedAt := l.sharedAt
	l.syncMu.Unlock()
	write("after")
	syncs, waits, synced, written := counts()
	if syncs != 22 || synced != written {
		t.Errorf("the Write after a shared fsync: %d fsyncs in all, %d of %d lines synced; want 22, all", syncs, synced, written)
	}
	if time.Since(sharedAt) < sharedFor && waits != 1 {
		// (On a machine slow enough that sharedFor passed, it need not wait.)
		t.Errorf("the Write right after a shared fsync did not wait for others to share its own (%d waits)", waits)
	}
}
