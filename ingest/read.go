package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/jsonl"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// readChat reads FireAct's OpenAI chat files: JSONL of {"messages": [...]} where the
// first user turn is the question, assistant turns are "Thought: …\nAction: …" and
// later user turns are "Observation: …", the last one "Episode finished, reward = …".
func readChat(ctx context.Context, path string, fn func(string, record, error) error) error {
	return eachLine(path, func(line int, b []byte) error {
		var rec struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		where := fmt.Sprintf("line %d", line)
		if err := json.Unmarshal(b, &rec); err != nil {
			return fn(where, record{}, err)
		}
		var r record
		var cur *pipeline.Step
		for _, m := range rec.Messages {
			switch m.Role {
			case "system":
			case "user":
				if r.question == "" && len(r.steps) == 0 {
					r.question = stripLabel(m.Content)
					continue
				}
				obs := stripLabel(m.Content)
				if c, ok := ParseReward(obs); ok {
					r.outcome = &c
				}
				if cur != nil {
					cur.Observation = strings.TrimSpace(cur.Observation + "\n" + obs)
					markRefused(cur)
				}
			case "assistant":
				r.steps = append(r.steps, step(m.Content, len(r.steps)+1))
				cur = &r.steps[len(r.steps)-1]
			default:
				return fn(where, record{}, fmt.Errorf("%w: unknown role %q", ErrBadRecord, m.Role))
			}
		}
		return fn(where, r, nil)
	})
}

// readAlpaca reads FireAct's Alpaca files: a JSON array of {instruction, input, output}
// where the question is the instruction (or the input, when there is one) and the
// output is the trajectory text.
func readAlpaca(ctx context.Context, path string, fn func(string, record, error) error) error {
	return eachArray(path, func(n int, raw json.RawMessage) error {
		var rec struct {
			Instruction string `json:"instruction"`
			Input       string `json:"input"`
			Output      string `json:"output"`
		}
		where := fmt.Sprintf("record %d", n+1)
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fn(where, record{}, err)
		}
		r := record{question: stripLabel(rec.Instruction)}
		if strings.TrimSpace(rec.Input) != "" {
			r.question = stripLabel(rec.Input)
		}
		r.steps, r.outcome = steps(rec.Output)
		return fn(where, r, nil)
	})
}

// readTranscripts reads the paper's GPT-3 transcripts: JSONL of {question_idx,
// transcript, answer, gt_answer, em, steps} where transcript starts with a Question: or
// Claim: line.
func readTranscripts(ctx context.Context, path string, fn func(string, record, error) error) error {
	return eachLine(path, func(line int, b []byte) error {
		var rec struct {
			QuestionIdx json.RawMessage `json:"question_idx"`
			Transcript  string          `json:"transcript"`
			Answer      string          `json:"answer"`
			GTAnswer    string          `json:"gt_answer"`
			EM          *float64        `json:"em"`
		}
		where := fmt.Sprintf("line %d", line)
		if err := json.Unmarshal(b, &rec); err != nil {
			return fn(where, record{}, err)
		}
		r := record{qid: string(bytes.Trim(rec.QuestionIdx, `"`)), gold: rec.GTAnswer, pred: rec.Answer}
		text := rec.Transcript
		if m := questionRe.FindStringSubmatchIndex(text); m != nil {
			r.question = strings.TrimSpace(text[m[2]:m[3]])
			text = text[m[1]:]
		}
		r.steps, r.outcome = steps(text)
		if rec.EM != nil {
			c := *rec.EM > 0
			r.outcome = &c
		}
		return fn(where, r, nil)
	})
}

// readTrajs reads FireAct's trajectory dumps: a JSON object {idx: {reward, em, f1, gt,
// pred, traj}} where traj is an Alpaca prompt ("### Instruction:" question, "###
// Response:" trajectory). Records come in file order.
func readTrajs(ctx context.Context, path string, fn func(string, record, error) error) error {
	dec, f, err := openJSON(path, '{', "a JSON object of trajectories")
	if err != nil {
		return err
	}
	defer f.Close()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("import %s: %w", path, err)
		}
		key, _ := tok.(string)
		var rec struct {
			Reward any      `json:"reward"`
			EM     any      `json:"em"`
			F1     *float64 `json:"f1"`
			GT     string   `json:"gt"`
			Pred   string   `json:"pred"`
			Traj   string   `json:"traj"`
		}
		where := fmt.Sprintf("record %q", key)
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("import %s %s: %w", path, where, err)
		}
		r := record{qid: key, gold: rec.GT, pred: rec.Pred, f1: rec.F1}
		text := rec.Traj
		if i := strings.Index(text, "### Instruction:"); i >= 0 {
			text = text[i+len("### Instruction:"):]
			if j := strings.Index(text, "### Response:"); j >= 0 {
				r.question = strings.TrimSpace(text[:j])
				text = text[j+len("### Response:"):]
			}
		}
		r.steps, r.outcome = steps(text)
		if c, ok := truthy(rec.Reward); ok {
			r.outcome = &c
		}
		if c, ok := truthy(rec.EM); ok {
			v := 0.0
			if c {
				v = 1
			}
			r.em = &v
		}
		if err := fn(where, r, nil); err != nil {
			return err
		}
	}
	return nil
}

func cmpErr(err error) string {
	if err == nil {
		return "got another value"
	}
	return err.Error()
}

// truthy reads a JSON bool or number as a verdict.
func truthy(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case float64:
		return x > 0, true
	}
	return false, false
}

// eachLine calls fn with each non-blank line of a JSONL file.
func eachLine(path string, fn func(line int, b []byte) error) error {
	f, err := safefile.Open(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	lines := jsonl.NewReader(bufio.NewReaderSize(f, 1<<20), dataset.MaxRecordBytes)
	for {
		b, err := lines.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, jsonl.ErrTooLong):
			return fmt.Errorf("read %s line %d: a line over %s, the most reactgen reads of one record", path, lines.Line(), safefile.FormatBytes(dataset.MaxRecordBytes))
		case err != nil:
			return fmt.Errorf("read %s: %w", path, err)
		}
		if b = bytes.TrimSpace(b); len(b) == 0 {
			continue
		}
		if err := fn(lines.Line(), b); err != nil {
			return err
		}
	}
}

// openJSON opens the JSON file path for streaming, past the delim that opens its
// container; want names that container in the error when it is not there.
func openJSON(path string, delim json.Delim, want string) (*dataset.RecordDecoder, *os.File, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("import: %w", err)
	}
	dec := dataset.NewRecordDecoder(bufio.NewReaderSize(f, 1<<20))
	if tok, err := dec.Token(); err != nil || tok != delim {
		f.Close()
		return nil, nil, fmt.Errorf("import %s: want %s: %v", path, want, cmpErr(err))
	}
	return dec, f, nil
}

// eachArray calls fn with each element of a JSON array file, streaming.
func eachArray(path string, fn func(n int, raw json.RawMessage) error) error {
	dec, f, err := openJSON(path, '[', "a JSON array")
	if err != nil {
		return err
	}
	defer f.Close()
	for n := 0; dec.More(); n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("import %s record %d: %w", path, n+1, err)
		}
		if err := fn(n, raw); err != nil {
			return err
		}
	}
	return nil
}
