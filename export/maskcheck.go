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
	scan := maskScanner{list: list, trainObs: trainObs}
	for {
		line, err := lines.Next()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, fmt.Errorf("loss mask check %s line %d: %w", path, rows+1, err)
		}
		rows++
		turns, err = scan.scan(line, turns[:0])
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

// maskRow is the part of a written row that the mask check reads. Without trainObs the
// turns' texts are not decoded: goccy skips them by the grammar of JSON (an invalid string
// there is still a syntax error), without unescaping or copying them.
type maskRow[T any] struct {
	Messages      []T `json:"messages"`
	Conversations []T `json:"conversations"`
}

// maskJSON is a turn's mask fields.
type maskJSON struct {
	Role   string              `json:"role"`
	From   string              `json:"from"`
	Weight fastjson.RawMessage `json:"weight"`
	Train  *bool               `json:"train"`
	Loss   *bool               `json:"loss"`
}

// maskJSONText is maskJSON with the turn's text, read under export.train_observations.
type maskJSONText struct {
	maskJSON
	Content string `json:"content"`
	Value   string `json:"value"`
}

// maskScanner decodes rows into the same arrays from one line to the next.
type maskScanner struct {
	list     string // "messages" or "conversations"
	trainObs bool
	row      maskRow[maskJSON]
	rowText  maskRow[maskJSONText]
}

// scanMaskLine decodes line, one JSON object, with github.com/goccy/go-json (the
// episodes' decoder; a hand-written scanner here measured no gain on the export's wall
// time, BENCHMARKS.md "Codecs") and appends the turns of its array list ("messages" or
// "conversations").
func scanMaskLine(line []byte, list string, trainObs bool, turns []maskTurn) ([]maskTurn, error) {
	s := maskScanner{list: list, trainObs: trainObs}
	return s.scan(line, turns)
}

// scan is scanMaskLine with s's arrays.
func (s *maskScanner) scan(line []byte, turns []maskTurn) ([]maskTurn, error) {
	if s.trainObs {
		ts, err := decodeMaskRow(line, s.list, &s.rowText)
		for _, w := range ts {
			turns = append(turns, maskTurnOf(w.Role+w.From, w.Weight, w.Train, w.Loss))
			turns[len(turns)-1].obs = strings.HasPrefix(w.Content+w.Value, "Observation: ")
		}
		return turns, err
	}
	ts, err := decodeMaskRow(line, s.list, &s.row)
	for _, w := range ts {
		turns = append(turns, maskTurnOf(w.Role+w.From, w.Weight, w.Train, w.Loss))
	}
	return turns, err
}

// decodeMaskRow decodes line into row, whose arrays it reuses, and returns the turns of
// list. Every element of the arrays is zeroed first, so nothing of the line before is read.
func decodeMaskRow[T any](line []byte, list string, row *maskRow[T]) ([]T, error) {
	clear(row.Messages[:cap(row.Messages)])
	clear(row.Conversations[:cap(row.Conversations)])
	row.Messages, row.Conversations = row.Messages[:0], row.Conversations[:0]
	if err := fastjson.Unmarshal(line, row); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if list == "conversations" {
		return row.Conversations, nil
	}
	return row.Messages, nil
}

// maskTurnOf is the mask of a turn decoded with role, weight, train and loss.
func maskTurnOf(role string, weight fastjson.RawMessage, train, loss *bool) maskTurn {
	return maskTurn{
		role:   internRole(role),
		weight: len(weight) > 0 && string(weight) != "null",
		train:  (train != nil && *train) || (loss != nil && *loss),
	}
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
