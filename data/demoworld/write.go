package demoworld

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/reactgen/reactgen/internal/atomicfile"
)

// Write saves the world under dir (created if missing) as corpus.jsonl (one
// {"title", "text"} page a line), hotpotqa.json (a JSON array, one question a line) and
// fever.jsonl (one claim a line). Each file is written to a temporary name and renamed
// into place, so a failed write never leaves a partial file under the final name.
func (w *World) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	var corpus bytes.Buffer
	for _, p := range w.Pages {
		if err := encodeLine(&corpus, struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		}{p.Title, p.Text()}); err != nil {
			return fmt.Errorf("encode page %q: %w", p.Title, err)
		}
	}
	var hotpot bytes.Buffer
	hotpot.WriteString("[\n")
	for i, q := range w.Questions {
		if i > 0 {
			hotpot.WriteString(",\n")
		}
		if err := encodeLine(&hotpot, q); err != nil {
			return fmt.Errorf("encode question %s: %w", q.ID, err)
		}
		hotpot.Truncate(hotpot.Len() - 1) // the encoder's newline; the comma goes first
	}
	hotpot.WriteString("\n]\n")
	var fever bytes.Buffer
	for _, c := range w.Claims {
		if err := encodeLine(&fever, c); err != nil {
			return fmt.Errorf("encode claim %d: %w", c.ID, err)
		}
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"corpus.jsonl", corpus.Bytes()}, {"hotpotqa.json", hotpot.Bytes()}, {"fever.jsonl", fever.Bytes()}} {
		if err := atomicfile.WriteFile(filepath.Join(dir, f.name), func(w io.Writer) error {
			_, err := w.Write(f.data)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// encodeLine appends v as one JSON line, without HTML escaping so the files read plainly.
func encodeLine(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
