package export

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/reactgen/reactgen/internal/fastjson"
	"github.com/reactgen/reactgen/internal/jsonl"
	"github.com/reactgen/reactgen/internal/safefile"
)

// openJSONL opens a JSONL file written by the exporter, decompressing by extension. It
// is read past the page cache where the file system allows (newDirectReader).
func openJSONL(path string) (io.Reader, func() error, error) {
	f, err := safefile.OpenPath(path)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(newDirectReader(f))
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("open %s: %w", path, err)
		}
		return zr, func() error { zr.Close(); return f.Close() }, nil
	case strings.HasSuffix(path, ".zst"):
		zr, err := zstd.NewReader(newDirectReader(f), zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("open %s: %w", path, err)
		}
		return zr, func() error { zr.Close(); return f.Close() }, nil
	}
	return newDirectReader(f), f.Close, nil
}

// MaskError is a written row whose loss mask marks a non-assistant turn trainable.
type MaskError struct {
	Path string
	Line int
	Turn int
	Role string
}

func (e *MaskError) Error() string {
	return fmt.Sprintf("loss mask check %s line %d turn %d: %s turn is marked trainable", e.Path, e.Line, e.Turn, e.Role)
}

// checkMasks re-reads a written JSONL file of a masked format and proves that no system,
// user or observation turn is trainable (observation turns may be with trainObs), and
// that a weight appears only on assistant turns.
func checkMasks(path, format string, trainObs bool) (rows int, err error) {
	r, closeFn, err := openJSONL(path)
	if err != nil {
		return 0, fmt.Errorf("loss mask check: %w", err)
	}
	defer closeFn()
	lines := jsonl.NewReader(bufio.NewReaderSize(r, 1<<20), 256<<20)
	list := "messages"
	if format == "agentgym" {
		list = "conversations"
	}
	var turns []maskTurn
	for {
		line, err := lines.Next()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, fmt.Errorf("loss mask check %s line %d: %w", path, rows+1, err)
		}
		rows++
		turns, err = scanMaskLine(line, list, trainObs, turns[:0])
		if err != nil {
			return rows, fmt.Errorf("loss mask check %s line %d: %w", path, rows, err)
		}
		if len(turns) == 0 {
			return rows, fmt.Errorf("loss mask check %s line %d: no %s", path, rows, list)
		}
		switch format {
		case "openai-chat", "axolotl-chat":
			user := 0
			for i, m := range turns {
				if m.role == RoleAssistant {
					continue
				}
				if m.role == RoleUser {
					user++
				}
				if m.weight {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: m.role}
				}
				if m.train && !(m.role == RoleUser && trainObs && user-1 > 0 && m.obs) {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: m.role}
				}
			}
		case "agentgym":
			for i, c := range turns {
				if c.role == "gpt" {
					continue
				}
				if c.train && !(trainObs && i > 0 && c.obs) {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: c.role}
				}
			}
		}
	}
}

// maskTurn is the loss mask of one turn as written: its role ("role" or "from"), whether
// it carries a non-null weight, whether "train" or "loss" is true, and whether its text
// ("content" or "value") starts with "Observation: " (looked at only under trainObs).
type maskTurn struct {
	role   string
	weight bool
	train  bool
	obs    bool
}

// maskRow is the part of a written row that the mask check reads.
type maskRow struct {
	Messages      []maskJSON `json:"messages"`
	Conversations []maskJSON `json:"conversations"`
}

type maskJSON struct {
	Role    string              `json:"role"`
	From    string              `json:"from"`
	Content string              `json:"content"`
	Value   string              `json:"value"`
	Weight  fastjson.RawMessage `json:"weight"`
	Train   *bool               `json:"train"`
	Loss    *bool               `json:"loss"`
}

// scanMaskLine decodes line, one JSON object, with github.com/goccy/go-json (the
// episodes' decoder; a hand-written scanner here measured no gain on the export's wall
// time, BENCHMARKS.md "Codecs") and appends the turns of its array list ("messages" or
// "conversations").
func scanMaskLine(line []byte, list string, trainObs bool, turns []maskTurn) ([]maskTurn, error) {
	var row maskRow
	if err := fastjson.Unmarshal(line, &row); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	ts := row.Messages
	if list == "conversations" {
		ts = row.Conversations
	}
	for _, w := range ts {
		t := maskTurn{
			role:   internRole(w.Role + w.From),
			weight: len(w.Weight) > 0 && string(w.Weight) != "null",
			train:  (w.Train != nil && *w.Train) || (w.Loss != nil && *w.Loss),
		}
		if trainObs {
			t.obs = strings.HasPrefix(w.Content+w.Value, "Observation: ")
		}
		turns = append(turns, t)
	}
	return turns, nil
}

// internRole returns the constant for a known role, so the per-turn string is not kept.
func internRole(r string) string {
	for _, k := range [...]string{RoleUser, RoleAssistant, RoleSystem, "human", "gpt"} {
		if r == k {
			return k
		}
	}
	return r
}
