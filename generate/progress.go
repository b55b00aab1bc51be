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
// nothing (off). With generate.target_correct it counts toward the target what the run
// counts toward it (the episodes the filter will keep, see Tally), and its ETA is the
// time to reach it; the last line says why the run stopped and has no ETA. It is safe
// for concurrent use.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	bar      bool
	start    time.Time
	last     time.Time
	planned  int // episodes this run may start, at most (attempts of solved questions are skipped)
	target   int // generate.target_correct; 0 = none
	done     int
	correct  int // this run's correct episodes
	kept     int // this run's episodes the filter will keep
	total    int // episodes the filter will keep, including earlier runs'
	requests int
	usage    pipeline.Usage
	width    int
	stopped  string // why the run stopped, once it has
	scoring  bool   // eval: no filter follows, so no kept count (correct ones instead)
}

func newProgress(w io.Writer, mode string, planned, target, keptBefore int) *progress {
	p := &progress{planned: planned, target: target, total: keptBefore, start: time.Now()}
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

// episode counts a written episode; kept says whether the filter will keep it.
func (p *progress) episode(ep pipeline.Episode, kept bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if ep.Correct {
		p.correct++
	}
	if kept {
		p.kept++
		p.total++
	}
	p.requests += ep.LLMCalls
	p.usage = p.usage.Add(ep.Usage)
	if p.w == nil {
		return
	}
	now := time.Now()
	if p.bar {
		p.redraw(now)
		return
	}
	if now.Sub(p.last) >= progressInterval {
		p.last = now
		fmt.Fprintln(p.w, p.line(now))
	}
}

func (p *progress) redraw(now time.Time) {
	line := p.line(now)
	pad := max(p.width-len(line), 0)
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// line renders: the count toward the target (or the episodes out of those planned), the
// episodes and correct ones, requests, tokens, cost, cost per kept trajectory (per correct
// one in eval, which keeps nothing), and the ETA (or, once stopped, why).
func (p *progress) line(now time.Time) string {
	var b strings.Builder
	per, perName := p.kept, "kept"
	switch {
	case p.scoring:
		fmt.Fprintf(&b, "episodes %d/%d", p.done, p.planned)
		per, perName = p.correct, "correct"
	case p.target > 0:
		fmt.Fprintf(&b, "kept %d/%d  episodes %d (at most %d)", p.total, p.target, p.done, p.planned)
	default:
		fmt.Fprintf(&b, "episodes %d/%d  kept %d", p.done, p.planned, p.total)
	}
	rate := 0.0
	if p.done > 0 {
		rate = 100 * float64(p.correct) / float64(p.done)
	}
	fmt.Fprintf(&b, "  correct %d (%.1f%%)  requests %d  tokens %d  cost %s  per %s %s",
		p.correct, rate, p.requests, p.usage.TotalTokens, p.usage.CostText(), perName, p.usage.CostPerText(per))
	if p.stopped != "" {
		fmt.Fprintf(&b, "  stopped: %s", p.stopped)
		if p.target > 0 {
			if p.total >= p.target {
				fmt.Fprintf(&b, " (target met: %d of %d kept)", p.total, p.target)
			} else {
				fmt.Fprintf(&b, " (target not met: %d of %d kept)", p.total, p.target)
			}
		}
		return b.String()
	}
	fmt.Fprintf(&b, "  eta %s", p.eta(now))
	return b.String()
}

// eta is the time left at this run's pace: to the target when the episodes still
// planned can reach it at the rate the filter keeps them, else to the end of the
// planned episodes (a question file smaller than the target ends the run first, and
// the line says the target is out of reach). "-" until there is a pace to go by.
func (p *progress) eta(now time.Time) string {
	left := p.planned - p.done
	if p.done == 0 || left <= 0 {
		return "-"
	}
	episodes := float64(left)
	if p.target > 0 && p.total < p.target {
		if p.kept > 0 {
			if need := float64(p.target-p.total) * float64(p.done) / float64(p.kept); need < episodes {
				episodes = need
			} else {
				return p.durationFor(now, episodes) + " (target out of reach: the questions end first)"
			}
		}
	}
	return p.durationFor(now, episodes)
}

// durationFor is the time episodes more take at this run's pace.
func (p *progress) durationFor(now time.Time, episodes float64) string {
	per := float64(now.Sub(p.start)) / float64(p.done)
	return time.Duration(per * episodes).Round(time.Second).String()
}

// finish writes the last line, with why the run stopped instead of an ETA.
func (p *progress) finish(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = why
	if p.w == nil || p.done == 0 {
		return
	}
	if p.bar {
		p.redraw(time.Now())
		fmt.Fprintln(p.w)
		return
	}
	fmt.Fprintln(p.w, p.line(time.Now()))
}
