package bpe

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// TestSplitASCIIMatchesTheLibrary: o200k_base counts with the hand split and the piece
// cache equal the library's own (regex split, no cache) on every ASCII text at hand:
// the reference texts, the demo corpus and random strings dense in the characters the
// expression treats specially.
func TestSplitASCIIMatchesTheLibrary(t *testing.T) {
	lib, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what, s string) {
		t.Helper()
		if !isASCII(s) {
			return
		}
		want, _ := lib.Count(s)
		if got := c.Count(s); got != want {
			var pieces []string
			splitASCII(s, func(p string) { pieces = append(pieces, p) })
			t.Fatalf("%s: %d tokens, the library counts %d; pieces %q", what, got, want, pieces)
		}
	}
	for name, text := range referenceTexts(t) {
		check(name, text)
		for _, line := range strings.Split(text, "\n") {
			check(name+" line", line)
		}
	}
	demo, _ := filepath.Glob("../../data/demo/*")
	for _, p := range demo {
		data, err := os.ReadFile(p)
		if err != nil || len(data) > 4<<20 {
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if i > 2000 {
				break
			}
			check(p, line)
		}
	}
	const alphabet = "aAbZz09 \t\n\r\v\f'sStTrReEvVmMlLdD.,;:!?/\\\"()[]{}-_#@&*+=<>|~`^%$"
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := 1 + r.IntN(24)
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		check("random", b.String())
	}
}

// TestPieceCacheConcurrentCounts counts the reference texts' lines from several
// goroutines at once, on a fresh cache that each count fills while the others read it
// (the lock is let go while a missed piece is counted), and holds every count to the
// library's. Run with -race (make race) it checks the cache's locking.
func TestPieceCacheConcurrentCounts(t *testing.T) {
	lib, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, text := range referenceTexts(t) {
		for _, line := range strings.Split(text, "\n") {
			if isASCII(line) {
				lines = append(lines, line)
			}
		}
	}
	want := make([]int, len(lines))
	for i, line := range lines {
		want[i], _ = lib.Count(line)
	}
	c := &tiktoken{name: "o200k_base", codec: lib, fast: true}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Go(func() {
			for k := range lines {
				i := (k + g*len(lines)/4) % len(lines) // each goroutine starts elsewhere
				if got := c.Count(lines[i]); got != want[i] {
					errs <- fmt.Sprintf("line %q: %d tokens, the library counts %d", lines[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func BenchmarkCountO200k(b *testing.B) {
	texts := referenceTexts(&testing.T{})
	var all strings.Builder
	for _, t := range texts {
		if isASCII(t) {
			all.WriteString(t)
		}
	}
	s := strings.Repeat(all.String(), 4)
	c, _ := Open("o200k_base")
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		c.Count(s)
	}
}

// TestIsASCII holds the word-at-a-time isASCII to a byte loop: strings of every length
// up to 24, plain and with one byte of 0x80 or above at each position.
func TestIsASCII(t *testing.T) {
	for n := range 25 {
		b := []byte(strings.Repeat("a~\x7f\x00", 7)[:n])
		if !isASCII(string(b)) {
			t.Errorf("isASCII(%q) = false", b)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xc3, 0xff} {
				old := b[i]
				b[i] = c
				if isASCII(string(b)) {
					t.Errorf("isASCII(%q) = true", b)
				}
				b[i] = old
			}
		}
	}
}
