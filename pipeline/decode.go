package pipeline

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeEpisode decodes one episode record, as json.Unmarshal would. Decoding the episode
// log and kept.jsonl was most of the filter's and the export's time, so the lines
// json.Marshal writes take a direct path over the known fields: one string holds the
// line and the text fields that need no unescaping are slices of it (identifiers and
// names get strings of their own, see owned). Anything that path does
// not decode exactly as encoding/json does (an unknown, repeated or differently cased
// key, null, a lone surrogate, invalid UTF-8, an integer field written as 1.0, a syntax
// error) goes to json.Unmarshal instead, so the result and the errors are encoding/json's
// (TestDecodeEpisodeMatchesEncodingJSON).
func decodeEpisode(b []byte, ep *Episode) error {
	d := episodeDecoder{s: string(b)}
	if d.episode(ep) && d.end() {
		return nil
	}
	*ep = Episode{}
	return json.Unmarshal(b, ep)
}

// episodeDecoder reads one JSON object into an Episode; every method reports false when
// the input leaves its path.
type episodeDecoder struct {
	s string
	i int
}

func (d *episodeDecoder) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c.
func (d *episodeDecoder) next(c byte) bool {
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// peek skips white space and reports whether c comes next, without consuming it.
func (d *episodeDecoder) peek(c byte) bool {
	d.ws()
	return d.i < len(d.s) && d.s[d.i] == c
}

func (d *episodeDecoder) end() bool {
	d.ws()
	return d.i == len(d.s)
}

// object reads `{ "key": value, ... }`, calling field for each key with the decoder
// placed on its value. A key seen twice leaves the path (encoding/json would merge the
// two values into one).
func (d *episodeDecoder) object(field func(key string) (int, bool)) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen uint64
	for {
		key, ok := d.str()
		if !ok || !d.next(':') {
			return false
		}
		bit, ok := field(key)
		if !ok || seen&(1<<bit) != 0 {
			return false
		}
		seen |= 1 << bit
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// array reads `[ value, ... ]`, calling elem for each value.
func (d *episodeDecoder) array(elem func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next(']')
	}
}

// plainByte marks the bytes that stand for themselves in a JSON string: ASCII, no control
// character, quote or backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string. Without escapes it is a slice of the line; invalid UTF-8 (which
// encoding/json replaces), a control character or a bad escape leaves the path.
func (d *episodeDecoder) str() (string, bool) {
	if !d.next('"') {
		return "", false
	}
	start := d.i
	ascii, escaped := true, false
	for d.i < len(d.s) {
		for d.i < len(d.s) && plainByte[d.s[d.i]] {
			d.i++
		}
		if d.i == len(d.s) {
			break
		}
		c := d.s[d.i]
		switch {
		case c == '"':
			raw := d.s[start:d.i]
			d.i++
			if !ascii && !utf8.ValidString(raw) {
				return "", false
			}
			if !escaped {
				return raw, true
			}
			return unescape(raw)
		case c == '\\':
			escaped = true
			d.i += 2 // the escape's second byte is checked by unescape
		case c < 0x20:
			return "", false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			d.i++
		}
	}
	return "", false
}

// unescape decodes the escapes of a string's contents. A \u escape of a surrogate is
// left to encoding/json (it pairs them, or replaces a lone one).
func unescape(raw string) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+6 > len(raw) {
				return "", false
			}
			r, err := strconv.ParseUint(raw[i+2:i+6], 16, 32)
			if err != nil || raw[i+2] == '+' || utf16.IsSurrogate(rune(r)) {
				return "", false
			}
			out = utf8.AppendRune(out, rune(r))
			i += 6
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

// number reads a JSON number literal.
func (d *episodeDecoder) number() (lit string, isInt bool, ok bool) {
	d.ws()
	start := d.i
	isInt = true
	if d.i < len(d.s) && d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.i < len(d.s) && d.s[d.i] >= '1' && d.s[d.i] <= '9':
		d.digits()
	default:
		return "", false, false
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		isInt = false
		d.i++
		if !d.digits() {
			return "", false, false
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		isInt = false
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return "", false, false
		}
	}
	return d.s[start:d.i], isInt, true
}

func (d *episodeDecoder) digits() bool {
	start := d.i
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// int64 reads an integer field: encoding/json refuses a fraction or an exponent there.
func (d *episodeDecoder) int64(v *int64) bool {
	lit, isInt, ok := d.number()
	if !ok || !isInt {
		return false
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	*v = n
	return err == nil
}

func (d *episodeDecoder) int(v *int) bool {
	var n int64
	if !d.int64(&n) || int64(int(n)) != n {
		return false
	}
	*v = int(n)
	return true
}

func (d *episodeDecoder) float(v *float64) bool {
	lit, _, ok := d.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(lit, 64)
	*v = f
	return err == nil
}

func (d *episodeDecoder) bool(v *bool) bool {
	d.ws()
	switch {
	case len(d.s)-d.i >= 4 && d.s[d.i:d.i+4] == "true":
		*v = true
		d.i += 4
	case len(d.s)-d.i >= 5 && d.s[d.i:d.i+5] == "false":
		*v = false
		d.i += 5
	default:
		return false
	}
	return true
}

func (d *episodeDecoder) string(v *string) bool {
	s, ok := d.str()
	*v = s
	return ok
}

// owned reads a string that holds no reference to the line: an identifier or a name that
// a stage may keep after the record (a filter candidate's id, a map key) must not keep
// the whole line alive. Names that recur are shared.
func (d *episodeDecoder) owned(v *string) bool {
	s, ok := d.str()
	if name, known := names[s]; known {
		*v = name
	} else {
		*v = strings.Clone(s)
	}
	return ok
}

// names are the values of the enumerated fields.
var names = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"", TaskHotpotQA, TaskFEVER, LabelSupports, LabelRefutes, LabelNEI,
		StopFinished, StopMaxSteps, StopLoop, StopError, StopBudget, StopInterrupted,
		ActionSearch, ActionLookup, ActionFinish, ActionInvalid,
		"react", "act", "cot", "cot-sc", "standard", "react-cot-sc", "cot-sc-react", "expert", "chat", "completion", "tools",
		"bridge", "comparison", "stop", "length", "tool_calls", "search", "lookup", "finish"} {
		m[s] = s
	}
	return m
}()

func (d *episodeDecoder) episode(ep *Episode) bool {
	return d.object(func(key string) (int, bool) {
		switch key {
		case "schema":
			return 0, d.int(&ep.Schema)
		case "id":
			return 1, d.owned(&ep.ID)
		case "run_id":
			return 2, d.owned(&ep.RunID)
		case "task":
			return 3, d.owned(&ep.Task)
		case "question_id":
			return 4, d.owned(&ep.QuestionID)
		case "question":
			return 5, d.string(&ep.Question)
		case "answer":
			return 6, d.owned(&ep.Answer)
		case "question_type":
			return 7, d.owned(&ep.QuestionType)
		case "method":
			return 8, d.owned(&ep.Method)
		case "branch":
			return 9, d.owned(&ep.Branch)
		case "policy":
			return 10, d.owned(&ep.Policy)
		case "format":
			return 11, d.owned(&ep.Format)
		case "attempt":
			return 12, d.int(&ep.Attempt)
		case "seed":
			return 13, d.int64(&ep.Seed)
		case "steps":
			ep.Steps = []Step{}
			return 14, d.array(func() bool {
				ep.Steps = append(ep.Steps, Step{})
				return d.step(&ep.Steps[len(ep.Steps)-1])
			})
		case "samples":
			ep.Samples = []Sample{}
			return 15, d.array(func() bool {
				ep.Samples = append(ep.Samples, Sample{})
				return d.sample(&ep.Samples[len(ep.Samples)-1])
			})
		case "prediction":
			return 16, d.string(&ep.Prediction)
		case "finished":
			return 17, d.bool(&ep.Finished)
		case "correct":
			return 18, d.bool(&ep.Correct)
		case "em":
			return 19, d.float(&ep.EM)
		case "f1":
			return 20, d.float(&ep.F1)
		case "stop_reason":
			return 21, d.owned(&ep.StopReason)
		case "llm_calls":
			return 22, d.int(&ep.LLMCalls)
		case "bad_calls":
			return 23, d.int(&ep.BadCalls)
		case "usage":
			return 24, d.usage(&ep.Usage)
		case "latency_ms":
			return 25, d.int64(&ep.LatencyMS)
		case "rationalized":
			return 26, d.bool(&ep.Rationalized)
		case "error":
			return 27, d.string(&ep.Error)
		case "round":
			return 28, d.int(&ep.Round)
		}
		return 0, false
	})
}

func (d *episodeDecoder) step(s *Step) bool {
	return d.object(func(key string) (int, bool) {
		switch key {
		case "thought":
			return 0, d.string(&s.Thought)
		case "action":
			return 1, d.string(&s.Action)
		case "action_type":
			return 2, d.owned(&s.ActionType)
		case "argument":
			return 3, d.string(&s.Argument)
		case "observation":
			return 4, d.string(&s.Observation)
		case "calls":
			s.Calls = []Call{}
			return 5, d.array(func() bool {
				s.Calls = append(s.Calls, Call{})
				return d.call(&s.Calls[len(s.Calls)-1])
			})
		case "tool_call":
			if d.peek('n') {
				return 6, false // null: encoding/json's
			}
			s.ToolCall = &ToolCall{}
			return 6, d.toolCall(s.ToolCall)
		}
		return 0, false
	})
}

func (d *episodeDecoder) toolCall(c *ToolCall) bool {
	return d.object(func(key string) (int, bool) {
		switch key {
		case "id":
			return 0, d.owned(&c.ID)
		case "name":
			return 1, d.owned(&c.Name)
		case "arguments":
			return 2, d.string(&c.Arguments)
		}
		return 0, false
	})
}

func (d *episodeDecoder) sample(s *Sample) bool {
	return d.object(func(key string) (int, bool) {
		switch key {
		case "thought":
			return 0, d.string(&s.Thought)
		case "answer":
			return 1, d.string(&s.Answer)
		case "call":
			if d.peek('n') {
				return 2, false // null: encoding/json's
			}
			s.Call = &Call{}
			return 2, d.call(s.Call)
		}
		return 0, false
	})
}

func (d *episodeDecoder) call(c *Call) bool {
	return d.object(func(key string) (int, bool) {
		switch key {
		case "model":
			return 0, d.owned(&c.Model)
		case "prompt_hash":
			return 1, d.owned(&c.PromptHash)
		case "prompt":
			return 2, d.string(&c.Prompt)
		case "completion":
			return 3, d.string(&c.Completion)
		case "finish_reason":
			return 4, d.owned(&c.FinishReason)
		case "usage":
			return 5, d.usage(&c.Usage)
		case "latency_ms":
			return 6, d.int64(&c.LatencyMS)
		case "retries":
			return 7, d.int(&c.Retries)
		case "cached":
			return 8, d.bool(&c.Cached)
		case "bad":
			return 9, d.bool(&c.Bad)
		case "error":
			return 10, d.string(&c.Error)
		case "choice":
			return 11, d.int(&c.Choice)
		case "tool_calls":
			c.ToolCalls = []ToolCall{}
			return 12, d.array(func() bool {
				c.ToolCalls = append(c.ToolCalls, ToolCall{})
				return d.toolCall(&c.ToolCalls[len(c.ToolCalls)-1])
			})
		}
		return 0, false
	})
}

func (d *episodeDecoder) usage(u *Usage) bool {
	return d.object(func(key string) (int, bool) {
		switch key {
		case "prompt_tokens":
			return 0, d.int(&u.PromptTokens)
		case "completion_tokens":
			return 1, d.int(&u.CompletionTokens)
		case "total_tokens":
			return 2, d.int(&u.TotalTokens)
		case "cost_usd":
			return 3, d.float(&u.CostUSD)
		case "cached_tokens":
			return 4, d.int(&u.CachedTokens)
		case "cache_saving_usd":
			return 5, d.float(&u.CacheSavingUSD)
		}
		return 0, false
	})
}
