package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// The interchange formats: ADP standardized trajectories (neulab/agent-data-protocol,
// schema 1.0.0 to 1.3.x) and ATIF trajectories (Harbor, v1.0 to v1.7), as reactgen's
// export writes them (adp, atif) or as other corpora do. A file holds JSON Lines, a JSON
// array (as ADP's sample files are), or one JSON document (as Harbor's trajectory.json).
//
// A trajectory reactgen wrote carries its record (ADP's details, ATIF's extra, with
// source "reactgen"): the episode id, question id, gold answer, prediction, verdict and
// scores, method and policy are taken from it, so an export read back is the same
// episodes. Another corpus' trajectory becomes an episode as the other importers make
// them: the question is the user's first message (its Question:/Claim: line when it has
// one), each tool call a step (search, lookup and finish with their one argument; any
// other function an invalid action "name[arguments]"), the thought the action's
// description (ADP) or the step's message (ATIF), the observations after it its
// observation, and a closing text answer (ADP's last message_action, ATIF's last agent
// message without a call) the Finish.

// reactgenRecord is what reactgen writes of the episode beside the trajectory.
type reactgenRecord struct {
	Source     string `json:"source"`
	EpisodeID  string `json:"episode_id"`
	QuestionID string `json:"question_id"`
	Question   string `json:"question"`
	Answer     string `json:"answer"`
	Prediction string `json:"prediction"`
	Method     string `json:"method"`
	Policy     string `json:"policy"`
	Task       string `json:"task"`
	// Correct, EM and F1 are strings in ADP's details, JSON values in ATIF's extra.
	Correct json.RawMessage `json:"correct"`
	EM      json.RawMessage `json:"em"`
	F1      json.RawMessage `json:"f1"`
}

// apply puts the record into r, when reactgen wrote it.
func (rec *reactgenRecord) apply(r *record) error {
	if rec == nil || rec.Source != "reactgen" {
		return nil
	}
	r.id, r.method, r.policy, r.task = rec.EpisodeID, rec.Method, rec.Policy, rec.Task
	r.qid, r.gold, r.pred = rec.QuestionID, rec.Answer, rec.Prediction
	if rec.Question != "" {
		r.question = rec.Question
	}
	unquote := func(raw json.RawMessage) string { return strings.Trim(string(raw), `"`) }
	if len(rec.Correct) > 0 {
		c, err := strconv.ParseBool(unquote(rec.Correct))
		if err != nil {
			return fmt.Errorf("%w: correct %s is not a boolean", ErrBadRecord, rec.Correct)
		}
		r.outcome = &c
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  **float64
	}{{"em", rec.EM, &r.em}, {"f1", rec.F1, &r.f1}} {
		if len(f.raw) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(unquote(f.raw), 64)
		if err != nil {
			return fmt.Errorf("%w: %s %s is not a number", ErrBadRecord, f.name, f.raw)
		}
		*f.dst = &v
	}
	return nil
}

// callStep turns a function call into a step: search, lookup and finish with their
// argument as reactgen's actions, anything else an invalid action that keeps its text.
func callStep(thought, name string, args json.RawMessage) pipeline.Step {
	if a, err := tool.ToAction(name, string(args)); err == nil {
		return pipeline.Step{Thought: thought, Action: a.Text, ActionType: a.Type, Argument: a.Argument}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) != nil {
		compact.Write(bytes.TrimSpace(args))
	}
	text := compact.String()
	var m map[string]any
	if json.Unmarshal(args, &m) == nil && len(m) == 1 {
		for _, v := range m {
			if s, ok := v.(string); ok {
				text = s
			}
		}
	}
	return pipeline.Step{Thought: thought, Action: name + "[" + text + "]", ActionType: pipeline.ActionInvalid}
}

// answerStep is a closing text answer as the Finish.
func answerStep(thought, answer string) pipeline.Step {
	answer = strings.TrimSpace(answer)
	return pipeline.Step{Thought: thought, Action: "Finish[" + answer + "]", ActionType: pipeline.ActionFinish, Argument: answer}
}

// textStep is an action given as text (reactgen's "Action: <text>" for an invalid
// action, or another corpus' message mid-trajectory): the text after the last
// "Action: " is the action, what comes before it the thought.
func textStep(thought, text string) pipeline.Step {
	if i := strings.LastIndex(text, "Action: "); i >= 0 && (i == 0 || text[i-1] == '\n') {
		if thought == "" {
			thought = strings.TrimSuffix(text[:i], "\n")
		}
		text = text[i+len("Action: "):]
	}
	return pipeline.Step{Thought: thought, Action: text, ActionType: pipeline.ActionInvalid}
}

// addObservation appends text to the last step's observation.
func addObservation(r *record, text string) {
	s := &r.steps[len(r.steps)-1]
	if s.Observation != "" {
		text = s.Observation + "\n" + text
	}
	s.Observation = text
}

// setQuestion takes the user's message as the question when none is set yet, or when it
// is the first to carry a Question: or Claim: line.
func setQuestion(r *record, text string, labelled *bool) {
	if m := questionRe.FindStringSubmatch(text); m != nil && !*labelled {
		r.question, *labelled = strings.TrimSpace(m[1]), true
		return
	}
	if r.question == "" {
		r.question = stripLabel(text)
	}
}

type adpItem struct {
	Class            string          `json:"class_"`
	Function         string          `json:"function"`
	Kwargs           json.RawMessage `json:"kwargs"`
	Language         string          `json:"language"`
	Content          json.RawMessage `json:"content"`
	Description      *string         `json:"description"`
	ReasoningContent *string         `json:"reasoning_content"`
	Source           string          `json:"source"`
	URL              *string         `json:"url"`
	AXTree           *string         `json:"axtree"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// text is a content field as text: a JSON string as is, anything else as its JSON.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// readADP reads ADP standardized trajectories.
func readADP(ctx context.Context, path string, fn func(string, record, error) error) error {
	return eachDocument(path, func(where string, raw []byte) error {
		var traj struct {
			ID      string          `json:"id"`
			Content []adpItem       `json:"content"`
			Details json.RawMessage `json:"details"`
		}
		if err := json.Unmarshal(raw, &traj); err != nil {
			return fn(where, record{}, fmt.Errorf("%w: not an ADP trajectory: %v", ErrBadRecord, err))
		}
		var r record
		var rec reactgenRecord
		if len(traj.Details) > 0 && json.Unmarshal(traj.Details, &rec) != nil {
			rec = reactgenRecord{} // another corpus' details
		}
		lastAction, firstTool := adpBounds(traj.Content)
		labelled := false
		for i, it := range traj.Content {
			thought := deref(it.Description)
			var s pipeline.Step
			switch it.Class {
			case "api_action":
				s = callStep(thought, it.Function, it.Kwargs)
			case "code_action":
				s = pipeline.Step{Thought: thought, Action: "Code[" + it.Language + ": " + text(it.Content) + "]", ActionType: pipeline.ActionInvalid}
			case "message_action":
				if i < firstTool && i != lastAction {
					continue // what the agent said before it acted (an acknowledgement)
				}
				if i == lastAction {
					s = answerStep(thought, text(it.Content))
				} else {
					s = textStep(thought, text(it.Content))
				}
			case "text_observation", "image_observation", "web_observation":
				obs := adpObservation(it)
				if it.Class == "text_observation" && it.Source == "agent" {
					// Older ADP files record what the agent said as its observation.
					if i < firstTool && i != lastAction {
						continue
					}
					if i == lastAction {
						s = answerStep("", obs)
					} else {
						s = textStep("", obs)
					}
					break
				}
				if len(r.steps) == 0 {
					if it.Source == "user" {
						setQuestion(&r, obs, &labelled)
					}
				} else {
					addObservation(&r, obs)
				}
				continue
			default:
				return fn(where, record{}, fmt.Errorf("%w: content item %d: class_ %q is not an ADP action or observation", ErrBadRecord, i, it.Class))
			}
			s.Reasoning = deref(it.ReasoningContent)
			r.steps = append(r.steps, s)
		}
		if err := rec.apply(&r); err != nil {
			return fn(where, record{}, err)
		}
		return fn(where, r, nil)
	})
}

// adpBounds returns the index of the last action in content (what the agent said last
// counts) and of the first tool or code action (len(content) if none).
func adpBounds(content []adpItem) (lastAction, firstTool int) {
	lastAction, firstTool = -1, len(content)
	for i, it := range content {
		if strings.HasSuffix(it.Class, "_action") || (it.Class == "text_observation" && it.Source == "agent") {
			lastAction = i
		}
		if (it.Class == "api_action" || it.Class == "code_action") && i < firstTool {
			firstTool = i
		}
	}
	return lastAction, firstTool
}

// adpObservation is an observation item as text: an image as "[image: …]", a web page as
// its accessibility tree or else its URL.
func adpObservation(it adpItem) string {
	switch it.Class {
	case "image_observation":
		return "[image: " + text(it.Content) + "]"
	case "web_observation":
		return cmpOr(deref(it.AXTree), deref(it.URL))
	}
	return text(it.Content)
}

type atifStep struct {
	StepID           int             `json:"step_id"`
	Source           string          `json:"source"`
	ModelName        string          `json:"model_name"`
	Message          json.RawMessage `json:"message"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []struct {
		ID        string          `json:"tool_call_id"`
		Name      string          `json:"function_name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"tool_calls"`
	Observation *struct {
		Results []struct {
			SourceCallID *string         `json:"source_call_id"`
			Content      json.RawMessage `json:"content"`
		} `json:"results"`
	} `json:"observation"`
	Metrics *struct {
		PromptTokens       int       `json:"prompt_tokens"`
		CompletionTokens   int       `json:"completion_tokens"`
		CachedTokens       int       `json:"cached_tokens"`
		CostUSD            float64   `json:"cost_usd"`
		PromptTokenIDs     []int64   `json:"prompt_token_ids"`
		CompletionTokenIDs []int64   `json:"completion_token_ids"`
		Logprobs           []float64 `json:"logprobs"`
	} `json:"metrics"`
	LLMCallCount *int `json:"llm_call_count"`
}

// atifText is an ATIF message or result content: a string, or content parts whose text
// parts are joined (an image part as "[image: path]").
func atifText(raw json.RawMessage) string {
	var parts []struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source struct {
			Path string `json:"path"`
		} `json:"source"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		if len(raw) == 0 || string(raw) == "null" {
			return ""
		}
		return text(raw)
	}
	var out []string
	for _, p := range parts {
		if p.Type == "image" {
			out = append(out, "[image: "+p.Source.Path+"]")
		} else {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// readATIF reads ATIF trajectories.
func readATIF(ctx context.Context, path string, fn func(string, record, error) error) error {
	return eachDocument(path, func(where string, raw []byte) error {
		var traj struct {
			SchemaVersion string `json:"schema_version"`
			TrajectoryID  string `json:"trajectory_id"`
			SessionID     string `json:"session_id"`
			Agent         struct {
				ModelName string `json:"model_name"`
			} `json:"agent"`
			Steps []atifStep      `json:"steps"`
			Extra json.RawMessage `json:"extra"`
		}
		if err := json.Unmarshal(raw, &traj); err != nil {
			return fn(where, record{}, fmt.Errorf("%w: not an ATIF trajectory: %v", ErrBadRecord, err))
		}
		if !strings.HasPrefix(traj.SchemaVersion, "ATIF-v1.") {
			return fn(where, record{}, fmt.Errorf("%w: schema_version %q is not ATIF-v1.x", ErrBadRecord, traj.SchemaVersion))
		}
		var r record
		var rec reactgenRecord
		if len(traj.Extra) > 0 && json.Unmarshal(traj.Extra, &rec) != nil {
			rec = reactgenRecord{}
		}
		lastAgent, firstTool := atifBounds(traj.Steps)
		labelled := false
		for i, st := range traj.Steps {
			msg := atifText(st.Message)
			switch st.Source {
			case "system":
				continue
			case "user":
				if len(r.steps) == 0 {
					setQuestion(&r, msg, &labelled)
				} else {
					addObservation(&r, msg)
				}
				continue
			case "agent":
				if i < firstTool && i != lastAgent && st.Observation == nil {
					continue // what the agent said before it acted (an acknowledgement)
				}
			default:
				return fn(where, record{}, fmt.Errorf("%w: step %d: source %q is not system, user or agent", ErrBadRecord, st.StepID, st.Source))
			}
			addATIFStep(&r, &st, msg, i == lastAgent, cmpOr(st.ModelName, traj.Agent.ModelName))
		}
		if err := rec.apply(&r); err != nil {
			return fn(where, record{}, err)
		}
		return fn(where, r, nil)
	})
}

// atifBounds returns the index of the last agent step and of the first agent step that
// calls a tool (len(steps) if none).
func atifBounds(steps []atifStep) (lastAgent, firstTool int) {
	lastAgent, firstTool = -1, len(steps)
	for i, st := range steps {
		if st.Source == "agent" {
			lastAgent = i
			if len(st.ToolCalls) > 0 && i < firstTool {
				firstTool = i
			}
		}
	}
	return lastAgent, firstTool
}

// addATIFStep adds an agent step (msg its message, last whether no agent step follows) to
// r: a step per tool call with the results linked to it, else the answer (the last step
// with no observation) or a text step, then the results linked to no call as an
// observation. The first step added carries the reasoning and the metrics' call, by
// model.
func addATIFStep(r *record, st *atifStep, msg string, last bool, model string) {
	first := len(r.steps)
	results := map[string]string{}
	var unlinked []string
	if st.Observation != nil {
		for _, res := range st.Observation.Results {
			c := atifText(res.Content)
			if res.SourceCallID != nil && *res.SourceCallID != "" {
				results[*res.SourceCallID] = strings.TrimPrefix(results[*res.SourceCallID]+"\n"+c, "\n")
			} else {
				unlinked = append(unlinked, c)
			}
		}
	}
	switch {
	case len(st.ToolCalls) > 0:
		for k, c := range st.ToolCalls {
			thought := ""
			if k == 0 {
				thought = msg
			}
			s := callStep(thought, c.Name, c.Arguments)
			s.Observation = results[c.ID]
			r.steps = append(r.steps, s)
		}
	case last && st.Observation == nil:
		r.steps = append(r.steps, answerStep("", msg))
	default:
		r.steps = append(r.steps, textStep("", msg))
	}
	if len(unlinked) > 0 {
		addObservation(r, strings.Join(unlinked, "\n"))
	}
	s := &r.steps[first]
	s.Reasoning = st.ReasoningContent
	if m := st.Metrics; m != nil {
		s.Calls = []pipeline.Call{{Model: model, Usage: pipeline.Usage{PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens,
			TotalTokens: m.PromptTokens + m.CompletionTokens, CostUSD: m.CostUSD, CachedTokens: m.CachedTokens},
			Reasoning: st.ReasoningContent, Logprobs: m.Logprobs, PromptTokenIDs: m.PromptTokenIDs, CompletionTokenIDs: m.CompletionTokenIDs}}
		n := 1
		if st.LLMCallCount != nil {
			n = *st.LLMCallCount
		}
		r.llmCalls += n
	}
}

// eachDocument calls fn with each trajectory of a file: the elements of a JSON array, the
// lines of a JSON Lines file, or the one JSON document a file holds (pretty-printed, as
// Harbor writes trajectory.json), each named for errors by its record number or line.
func eachDocument(path string, fn func(where string, raw []byte) error) error {
	f, err := safefile.Open(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	first, err := firstLine(br)
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	switch {
	case strings.HasPrefix(first, "["):
		return eachArray(path, func(n int, raw json.RawMessage) error { return fn(fmt.Sprintf("record %d", n+1), raw) })
	case json.Valid([]byte(first)):
		return eachLine(path, func(line int, b []byte) error { return fn(fmt.Sprintf("line %d", line), b) })
	}
	f, err = safefile.Open(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	dec := dataset.NewRecordDecoder(bufio.NewReaderSize(f, 1<<20))
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("import %s record %d: %w", path, n, err)
		}
		if err := fn(fmt.Sprintf("record %d", n), raw); err != nil {
			return err
		}
	}
}

// firstLine is the first non-blank line of r, trimmed.
func firstLine(r *bufio.Reader) (string, error) {
	for {
		line, err := r.ReadString('\n')
		if s := strings.TrimSpace(line); s != "" {
			return s, nil
		}
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
	}
}
