package finetune

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// reasoningKey is the key of a message's reasoning text in the openai-chat and
// openai-tools exports (export.reasoning keep): the field Qwen3-family and TRL templates
// render, which OpenAI's fine-tuning format does not have.
const reasoningKey = "reasoning_content"

// ForUpload returns an openai-chat or openai-tools JSONL file as OpenAI's fine-tuning
// API takes it: every message's reasoning_content removed, as OpenAI's format has no
// reasoning field and its checks refuse a message key they do not know. A line without
// the key is kept byte for byte (a file of them is returned as it is); a line with it is
// rewritten without it. A line that is not a JSON object of messages is an error naming
// it: the export wrote every line, so such a line is a changed file.
func ForUpload(b []byte) ([]byte, error) {
	if !bytes.Contains(b, []byte(`"`+reasoningKey+`"`)) {
		return b, nil
	}
	var out bytes.Buffer
	out.Grow(len(b))
	for n, rest := 1, b; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if !bytes.Contains(line, []byte(`"`+reasoningKey+`"`)) {
			out.Write(line)
			out.WriteByte('\n')
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(row["messages"], &msgs); err != nil {
			return nil, fmt.Errorf("line %d: messages: %w", n, err)
		}
		for _, m := range msgs {
			delete(m, reasoningKey)
		}
		enc, err := json.Marshal(msgs)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		row["messages"] = enc
		if line, err = json.Marshal(row); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}
