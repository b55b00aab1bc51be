package generate

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/reactgen/reactgen/pipeline"
)

// progressInterval is how often the line mode writes a line.
const progressInterval = 5 * time.Second

// progress reports a run on stderr: a one-line bar redrawn with \r on a terminal
// (generate.progress auto or bar), a line every few seconds otherwise (auto or lines), or
// nothing (off). It is safe for concurrent use.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	bar      bool
	start    time.Time
	last     time.Time
	planned  int
	done     int
	correct  int // this run's correct episodes
	total    int // correct episodes including earlier runs
	requests int
	usage    pipeline.Usage
	width    int
}

func newProgress(w io.Writer, mode string, planned int) *progress {
	p := &progress{planned: planned, start: time.Now()}
	p.last = p.start
	if w == nil || mode == "off" {
		return p
	}
	p.w = w
	switch mode {
	case "bar":
		p.bar = true
	case "lines":
	default: // auto
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			p.bar = true
		}
	}
	return p
}

func (p *progress) plan(n int) {
	p.mu.Lock()
	p.planned += n
	p.mu.Unlock()
}

func (p *progress) episode(ep pipeline.Episode, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if ep.Correct {
		p.correct++
	}
	p.total = total
	p.requests += ep.LLMCalls
	p.usage = p.usage.Add(ep.Usage)
	if p.w == nil {
		return
	}
	now := time.Now()
	if p.bar {
		line := p.line(now)
		pad := max(p.width-len(line), 0)
		p.width = len(line)
		fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
		return
	}
	if now.Sub(p.last) >= progressInterval || p.done == p.planned {
		p.last = now
		fmt.Fprintln(p.w, p.line(now))
	}
}

// line renders: done/planned, correct, success rate, requests, tokens, cost, cost per
// correct trajectory, ETA.
func (p *progress) line(now time.Time) string {
	rate := 0.0
	if p.done > 0 {
		rate = 100 * float64(p.correct) / float64(p.done)
	}
	perCorrect := "-"
	if p.correct > 0 {
		perCorrect = fmt.Sprintf("$%.4f", p.usage.CostUSD/float64(p.correct))
	}
	eta := "-"
	if p.done > 0 && p.planned > p.done {
		el := now.Sub(p.start)
		eta = (time.Duration(float64(el) / float64(p.done) * float64(p.planned-p.done))).Round(time.Second).String()
	}
	return fmt.Sprintf("episodes %d/%d  correct %d (total %d, %.1f%%)  requests %d  tokens %d  cost $%.4f  per correct %s  eta %s",
		p.done, p.planned, p.correct, p.total, rate, p.requests, p.usage.TotalTokens, p.usage.CostUSD, perCorrect, eta)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	if p.bar {
		fmt.Fprintln(p.w)
		return
	}
	if p.done > 0 && p.done != p.planned {
		fmt.Fprintln(p.w, p.line(time.Now()))
	}
}
