package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// openJSONL opens a JSONL file written by the exporter, decompressing by extension.
func openJSONL(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("open %s: %w", path, err)
		}
		return zr, func() error { zr.Close(); return f.Close() }, nil
	case strings.HasSuffix(path, ".zst"):
		zr, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20), zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("open %s: %w", path, err)
		}
		return zr, func() error { zr.Close(); return f.Close() }, nil
	}
	return bufio.NewReaderSize(f, 1<<20), f.Close, nil
}

// maskLine holds only the loss-mask fields of a chat or AgentGym row, and the content
// (needed to tell an observation turn) only when observations may be trainable.
type maskLine struct {
	Messages []struct {
		Role    string           `json:"role"`
		Content string           `json:"content"`
		Weight  *json.RawMessage `json:"weight"`
		Train   *bool            `json:"train"`
	} `json:"messages"`
	Conversations []struct {
		From  string `json:"from"`
		Loss  *bool  `json:"loss"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// maskLineBare is maskLine without the contents.
type maskLineBare struct {
	Messages []struct {
		Role   string           `json:"role"`
		Weight *json.RawMessage `json:"weight"`
		Train  *bool            `json:"train"`
	} `json:"messages"`
	Conversations []struct {
		From string `json:"from"`
		Loss *bool  `json:"loss"`
	} `json:"conversations"`
}

func (b maskLineBare) full() maskLine {
	var l maskLine
	for _, m := range b.Messages {
		l.Messages = append(l.Messages, struct {
			Role    string           `json:"role"`
			Content string           `json:"content"`
			Weight  *json.RawMessage `json:"weight"`
			Train   *bool            `json:"train"`
		}{Role: m.Role, Weight: m.Weight, Train: m.Train})
	}
	for _, c := range b.Conversations {
		l.Conversations = append(l.Conversations, struct {
			From  string `json:"from"`
			Loss  *bool  `json:"loss"`
			Value string `json:"value"`
		}{From: c.From, Loss: c.Loss})
	}
	return l
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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for sc.Scan() {
		rows++
		var l maskLine
		if !trainObs {
			// Without contents to unquote the check runs several times faster.
			var bare maskLineBare
			if err := json.Unmarshal(sc.Bytes(), &bare); err != nil {
				return rows, fmt.Errorf("loss mask check %s line %d: %w", path, rows, err)
			}
			l = bare.full()
		} else if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return rows, fmt.Errorf("loss mask check %s line %d: %w", path, rows, err)
		}
		obsOK := func(i int, content string) bool {
			return trainObs && i > 0 && strings.HasPrefix(content, "Observation: ")
		}
		switch format {
		case "openai-chat", "axolotl-chat":
			if len(l.Messages) == 0 {
				return rows, fmt.Errorf("loss mask check %s line %d: no messages", path, rows)
			}
			user := 0
			for i, m := range l.Messages {
				if m.Role == RoleAssistant {
					continue
				}
				if m.Role == RoleUser {
					user++
				}
				if m.Weight != nil {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: m.Role}
				}
				if m.Train != nil && *m.Train && !(m.Role == RoleUser && obsOK(user-1, m.Content)) {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: m.Role}
				}
			}
		case "agentgym":
			if len(l.Conversations) == 0 {
				return rows, fmt.Errorf("loss mask check %s line %d: no conversations", path, rows)
			}
			for i, c := range l.Conversations {
				if c.From == "gpt" {
					continue
				}
				if c.Loss != nil && *c.Loss && !obsOK(i, c.Value) {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: c.From}
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return rows, fmt.Errorf("loss mask check %s line %d: %w", path, rows+1, err)
	}
	return rows, nil
}
