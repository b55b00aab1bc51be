package generate

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// heapSink drops every episode and, when the at-th is written, measures the live heap.
type heapSink struct {
	mu   sync.Mutex
	n    int
	at   int
	heap uint64
}

func (s *heapSink) Write(ctx context.Context, ep pipeline.Episode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n == s.at {
		s.heap = liveHeap()
	}
	return nil
}

// liveHeap is the heap in use after two full collections (the second empties what
// sync.Pools kept through the first).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heapDuringRun runs n questions through Run and returns how much the live heap had
// grown, near the end of the run, above what it was before the question list existed,
// and how much of that the question list itself holds.
func heapDuringRun(t *testing.T, n int) (run, list int64) {
	t.Helper()
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	srv.DropLog()
	c := openAI(t, srv, 0, nil)
	base := liveHeap()
	qs := manyQuestions(n)
	list = int64(liveHeap()) - int64(base)
	sink := &heapSink{at: n - 8}
	o, _ := runOpts(t, "react", "chat", c, qs)
	o.Sink = sink
	sum, err := Run(t.Context(), o)
	if err != nil || sum.Episodes != n {
		t.Fatalf("run of %d: %v, %d episodes", n, err, sum.Episodes)
	}
	runtime.KeepAlive(qs)
	return int64(sink.heap) - int64(base), list
}

// TestRunMemoryDoesNotGrowWithQuestions: ten times the questions may cost the question
// list and nothing per episode. A run that kept each episode (about 1 KB with its steps
// and calls) would hold megabytes more at 3,000 than at 300.
func TestRunMemoryDoesNotGrowWithQuestions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 3,300 episodes")
	}
	heapDuringRun(t, 50) // connections, pools and lazily built tables exist from here on
	smallRun, smallList := heapDuringRun(t, 300)
	bigRun, bigList := heapDuringRun(t, 3000)
	t.Logf("300 questions: list %d B, run %d B; 3,000: list %d B, run %d B", smallList, smallRun, bigList, bigRun)
	extra := (bigRun - bigList) - (smallRun - smallList)
	const slack = 1 << 20 // 388 B per extra episode
	if extra > slack {
		t.Errorf("2,700 more episodes left %d B more live heap beyond the question list (allowed %d)", extra, slack)
	}
}
