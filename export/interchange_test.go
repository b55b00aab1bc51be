package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/jsonltest"
	"github.com/reactgen/reactgen/pipeline"
)

// The JSON Schemas under testdata/schema are written from the formats' reference models
// (ADP's pydantic models in neulab/agent-data-protocol schema/, Harbor's ATIF RFC and
// pydantic models): every field with its type, the required ones, the enums, no field
// beyond them (both models forbid extra fields), and ATIF's agent-only fields. The rules
// the models check in code and JSON Schema cannot state (ids in order, calls answered by
// their results, the tools declared in the metadata) are checked by the functions below.

// compileSchema compiles a schema file of testdata/schema.
func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return s
}

// compileValue compiles a JSON Schema given as a value (a tool's parameters).
func compileValue(v any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("parameters.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("parameters.json")
}

// validateJSON checks one JSON document against s.
func validateJSON(s *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// toolDef is a tool declared in OpenAI's function shape, as ADP's custom_tools and ATIF's
// tool_definitions hold them.
type toolDef struct {
	Function struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	} `json:"function"`
}

// toolSchemas compiles each tool's parameters, by name; a name declared twice is an error
// (ADP's DatasetMetadata: custom_tools contains duplicate tool names).
func toolSchemas(tools []toolDef) (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	for _, td := range tools {
		if _, dup := out[td.Function.Name]; dup {
			return nil, fmt.Errorf("tool %q declared twice", td.Function.Name)
		}
		s, err := compileValue(td.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %q parameters: %w", td.Function.Name, err)
		}
		out[td.Function.Name] = s
	}
	return out, nil
}

// adpTools compiles the tools that ADP's metadata file declares in custom_tools.
func adpTools(md []byte) (map[string]*jsonschema.Schema, error) {
	var meta struct {
		CustomTools []toolDef `json:"custom_tools"`
	}
	if err := json.Unmarshal(md, &meta); err != nil {
		return nil, err
	}
	return toolSchemas(meta.CustomTools)
}

// checkCall checks a call against the declared tools: the function is one of them and
// its arguments satisfy its parameters.
func checkCall(tools map[string]*jsonschema.Schema, name string, args json.RawMessage) error {
	s, ok := tools[name]
	if !ok {
		return fmt.Errorf("function %q is not declared", name)
	}
	if err := validateJSON(s, args); err != nil {
		return fmt.Errorf("arguments of %s %s: %v", name, args, err)
	}
	return nil
}

type adpItem struct {
	Class            string          `json:"class_"`
	Function         string          `json:"function"`
	Kwargs           json.RawMessage `json:"kwargs"`
	Content          string          `json:"content"`
	Source           string          `json:"source"`
	Description      *string         `json:"description"`
	ReasoningContent *string         `json:"reasoning_content"`
}

// adpRules checks what ADP's models check in code, and the layout reactgen promises:
// the question first, as the user's; then each action (api_action or message_action),
// each but the last answered at once by one text_observation of the environment; the
// last the finish call; every api_action a declared tool with valid arguments.
func adpRules(data []byte, tools map[string]*jsonschema.Schema) error {
	var row struct {
		Content []adpItem `json:"content"`
		Details struct {
			Task string `json:"task"`
		} `json:"details"`
	}
	if err := json.Unmarshal(data, &row); err != nil {
		return err
	}
	c := row.Content
	if len(c) < 2 || c[0].Class != "text_observation" || c[0].Source != "user" {
		return fmt.Errorf("want the question as the user's text_observation first")
	}
	last := c[len(c)-1]
	switch {
	case pipeline.GameTask(row.Details.Task):
		// A game ends with the environment's answer to the action that ended it.
		if last.Class != "text_observation" || last.Source != "environment" {
			return fmt.Errorf("the game's trajectory does not end with the environment's last answer")
		}
	case last.Class != "api_action" || last.Function != "finish":
		return fmt.Errorf("the trajectory does not end with the finish call")
	}
	for i := 1; i < len(c); i++ {
		it := c[i]
		switch it.Class {
		case "api_action", "message_action":
			if it.Class == "api_action" {
				if err := checkCall(tools, it.Function, it.Kwargs); err != nil {
					return fmt.Errorf("item %d: %v", i, err)
				}
			}
			if i == len(c)-1 {
				continue
			}
			if n := c[i+1]; n.Class != "text_observation" || n.Source != "environment" {
				return fmt.Errorf("item %d: action not answered by the environment's text_observation (next %s/%s)", i, n.Class, n.Source)
			}
		case "text_observation":
			if p := c[i-1]; p.Class != "api_action" && p.Class != "message_action" {
				return fmt.Errorf("item %d: observation without the action it answers", i)
			}
		default:
			return fmt.Errorf("item %d: class_ %q", i, it.Class)
		}
	}
	return nil
}

type atifDoc struct {
	Agent struct {
		ToolDefinitions []toolDef `json:"tool_definitions"`
	} `json:"agent"`
	Steps []struct {
		StepID    int    `json:"step_id"`
		Source    string `json:"source"`
		ToolCalls []struct {
			ID        string          `json:"tool_call_id"`
			Name      string          `json:"function_name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
		Observation *struct {
			Results []struct {
				SourceCallID *string `json:"source_call_id"`
			} `json:"results"`
		} `json:"observation"`
		Metrics *atifMetrics `json:"metrics"`
	} `json:"steps"`
	FinalMetrics *atifFinalMetrics `json:"final_metrics"`
}

// atifRules checks what Harbor's models check in code: step ids 1, 2, … in order; every
// observation result's source_call_id names a tool call of its own step; call ids unique
// in the trajectory; final_metrics.total_steps the number of steps and its totals the
// steps' sums; every call a declared tool with valid arguments.
func atifRules(data []byte) error {
	var doc atifDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	tools, err := toolSchemas(doc.Agent.ToolDefinitions)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var sum atifFinalMetrics
	for i, st := range doc.Steps {
		if st.StepID != i+1 {
			return fmt.Errorf("steps[%d].step_id = %d, want %d", i, st.StepID, i+1)
		}
		ids := map[string]bool{}
		for _, c := range st.ToolCalls {
			if seen[c.ID] {
				return fmt.Errorf("step %d: tool_call_id %q used twice", st.StepID, c.ID)
			}
			seen[c.ID], ids[c.ID] = true, true
			if err := checkCall(tools, c.Name, c.Arguments); err != nil {
				return fmt.Errorf("step %d: %v", st.StepID, err)
			}
		}
		if st.Observation != nil {
			for _, r := range st.Observation.Results {
				if r.SourceCallID != nil && !ids[*r.SourceCallID] {
					return fmt.Errorf("step %d: source_call_id %q is not a tool call of the step", st.StepID, *r.SourceCallID)
				}
			}
		}
		if m := st.Metrics; m != nil {
			sum.TotalPromptTokens += m.PromptTokens
			sum.TotalCompletionTokens += m.CompletionTokens
			sum.TotalCachedTokens += m.CachedTokens
			sum.TotalCostUSD += m.CostUSD
		}
	}
	if f := doc.FinalMetrics; f != nil {
		sum.TotalSteps = len(doc.Steps)
		if f.TotalSteps != sum.TotalSteps || f.TotalPromptTokens != sum.TotalPromptTokens || f.TotalCompletionTokens != sum.TotalCompletionTokens ||
			f.TotalCachedTokens != sum.TotalCachedTokens || f.TotalCostUSD != sum.TotalCostUSD {
			return fmt.Errorf("final_metrics %+v, the steps sum to %+v", *f, sum)
		}
	}
	return nil
}

// metered is an episode whose steps carry what a reasoning model on vLLM with
// llm.logprobs returns: reasoning, usage and cost, log-probabilities and token ids; its
// second step was asked twice (a bad reply, then the Finish).
func metered() pipeline.Episode {
	ep := episodetest.Small()
	ep.ID, ep.QuestionID, ep.Policy = "ep-metered", "q-metered", "qwen3"
	ep.Steps[0].Reasoning = "The museum's page should say where.\n"
	ep.Steps[0].Calls = []pipeline.Call{{Model: "qwen3", PromptHash: "h1", Completion: "Thought: …", Usage: pipeline.Usage{PromptTokens: 120,
		CompletionTokens: 9, TotalTokens: 129, CostUSD: 0.000125, CachedTokens: 64}, Reasoning: ep.Steps[0].Reasoning,
		Logprobs: []float64{-0.5, -0.0625, -1.25e-7}, PromptTokenIDs: []int64{151644, 872, 198}, CompletionTokenIDs: []int64{785, 13, 0}}}
	ep.Steps[1].Reasoning = "Oslo it is."
	ep.Steps[1].Calls = []pipeline.Call{
		{Model: "qwen3", PromptHash: "h2", Bad: true, Usage: pipeline.Usage{PromptTokens: 150, CompletionTokens: 4, TotalTokens: 154, CostUSD: 0.00015},
			Logprobs: []float64{-3}, CompletionTokenIDs: []int64{1}},
		{Model: "qwen3", PromptHash: "h2", Usage: pipeline.Usage{PromptTokens: 150, CompletionTokens: 7, TotalTokens: 157, CostUSD: 0.000155},
			Reasoning: "Oslo it is.", Logprobs: []float64{-0.25, -0.125}, CompletionTokenIDs: []int64{46, 2}},
	}
	return ep
}

// interchangeKept is what the interchange tests export: the golden episodes (HotpotQA,
// FEVER, texts that need escaping), the metered one, one with an invalid action, and a
// CoT episode for the cot view.
func interchangeKept() []pipeline.Episode {
	invalid := episodetest.Episode("ep-invalid", "q-invalid", "Search[Old Mill]", "Dance[wildly]", "Finish[Aldbrook]")
	for i := range invalid.Steps {
		invalid.Steps[i].Argument = strings.TrimSuffix(strings.SplitN(invalid.Steps[i].Action, "[", 2)[1], "]")
	}
	invalid.Steps[1].ActionType, invalid.Steps[1].Argument = pipeline.ActionInvalid, ""
	invalid.Steps[1].Observation = "Invalid action: Dance[wildly]"
	cot := episodetest.Small()
	cot.ID, cot.QuestionID, cot.Method = "ep-cot", "q-cot", pipeline.MethodCoT
	cot.Steps = []pipeline.Step{{Thought: "The museum stands in Oslo, by the harbour.", Action: "Finish[Oslo]",
		ActionType: pipeline.ActionFinish, Argument: "Oslo"}}
	return append(goldenKept(), metered(), invalid, cot)
}

// exportInterchange exports eps to adp and atif in every view, with a system message.
func exportInterchange(t *testing.T, eps []pipeline.Episode) (string, Result) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	cfg := pipeline.ExportConfig{Formats: []string{"adp", "atif"}, Views: Views, System: "Answer the question.",
		ValidationFraction: 0.3, SplitSeed: 2}
	res, err := Run(t.Context(), RunOptions{Config: cfg, Dir: dir,
		Kept: func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) }})
	if err != nil {
		t.Fatal(err)
	}
	return dir, res
}

// lines reads the lines of a file.
func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	var out [][]byte
	jsonltest.Lines(t, path, func(_ int, line []byte) { out = append(out, bytes.Clone(line)) })
	return out
}

// TestInterchangeRowsPassSchemas validates every adp and atif row of every view against
// the formats' schemas and rules, and ADP's metadata file against its schema.
func TestInterchangeRowsPassSchemas(t *testing.T) {
	dir, res := exportInterchange(t, interchangeKept())
	adpSchema, atifSchema := compileSchema(t, "adp-1.2.0.schema.json"), compileSchema(t, "atif-v1.7.schema.json")
	md := readFile(t, filepath.Join(dir, ADPMetadata))
	if err := validateJSON(compileSchema(t, "adp-metadata.schema.json"), md); err != nil {
		t.Fatalf("%s: %v", ADPMetadata, err)
	}
	tools, err := adpTools(md)
	if err != nil {
		t.Fatalf("%s: %v", ADPMetadata, err)
	}
	rows := map[string]int{}
	for _, f := range res.Files {
		if f.Format != "adp" && f.Format != "atif" {
			continue
		}
		for i, line := range lines(t, filepath.Join(dir, f.Path)) {
			where := fmt.Sprintf("%s line %d", f.Path, i+1)
			if f.Format == "adp" {
				if err := validateJSON(adpSchema, line); err != nil {
					t.Errorf("%s: schema: %v", where, err)
				}
				if err := adpRules(line, tools); err != nil {
					t.Errorf("%s: %v", where, err)
				}
			} else {
				if err := validateJSON(atifSchema, line); err != nil {
					t.Errorf("%s: schema: %v", where, err)
				}
				if err := atifRules(line); err != nil {
					t.Errorf("%s: %v", where, err)
				}
			}
			rows[f.Format+"/"+f.View]++
		}
	}
	for _, format := range interchangeFormats {
		for _, v := range Views {
			if rows[format+"/"+v] != res.ByView[v] || res.ByView[v] == 0 {
				t.Errorf("%s, view %s: %d rows checked, %d examples exported", format, v, rows[format+"/"+v], res.ByView[v])
			}
		}
	}
}

// TestInterchangeChecksCatchViolations breaks valid rows one rule at a time: each must
// fail the check that states it, so the schema test cannot pass vacuously.
func TestInterchangeChecksCatchViolations(t *testing.T) {
	dir, res := exportInterchange(t, []pipeline.Episode{metered()})
	adpSchema, atifSchema := compileSchema(t, "adp-1.2.0.schema.json"), compileSchema(t, "atif-v1.7.schema.json")
	var adpLine, atifLine []byte
	for _, f := range res.Files {
		if f.View == ViewReAct && (f.Format == "adp" || f.Format == "atif") {
			if l := lines(t, filepath.Join(dir, f.Path)); len(l) > 0 && f.Format == "adp" {
				adpLine = l[0]
			} else if len(l) > 0 {
				atifLine = l[0]
			}
		}
	}
	tools, err := adpTools(readFile(t, filepath.Join(dir, ADPMetadata)))
	if err != nil {
		t.Fatal(err)
	}
	adpCheck := func(b []byte) error {
		if err := validateJSON(adpSchema, b); err != nil {
			return err
		}
		return adpRules(b, tools)
	}
	atifCheck := func(b []byte) error {
		if err := validateJSON(atifSchema, b); err != nil {
			return err
		}
		return atifRules(b)
	}
	if err := adpCheck(adpLine); err != nil {
		t.Fatalf("the valid adp row fails: %v", err)
	}
	if err := atifCheck(atifLine); err != nil {
		t.Fatalf("the valid atif row fails: %v", err)
	}
	edit := func(line []byte, fn func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		fn(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	item := func(m map[string]any, i int) map[string]any { return m["content"].([]any)[i].(map[string]any) }
	step := func(m map[string]any, i int) map[string]any { return m["steps"].([]any)[i].(map[string]any) }
	adpBreaks := map[string]func(m map[string]any){
		"no id":                            func(m map[string]any) { delete(m, "id") },
		"unknown schema_version":           func(m map[string]any) { m["schema_version"] = "9.9.9" },
		"a field ADP does not have":        func(m map[string]any) { m["tools"] = []any{} },
		"unknown class_":                   func(m map[string]any) { item(m, 1)["class_"] = "tool_action" },
		"api_action without kwargs":        func(m map[string]any) { delete(item(m, 1), "kwargs") },
		"extra field on an action":         func(m map[string]any) { item(m, 1)["tool_call_id"] = "x" },
		"observation source outside enum":  func(m map[string]any) { item(m, 2)["source"] = "tool" },
		"observation without source":       func(m map[string]any) { delete(item(m, 2), "source") },
		"undeclared function":              func(m map[string]any) { item(m, 1)["function"] = "browse" },
		"argument the tool does not take":  func(m map[string]any) { item(m, 1)["kwargs"] = map[string]any{"query": "x"} },
		"action not answered":              func(m map[string]any) { m["content"] = slices.Delete(m["content"].([]any), 2, 3) },
		"last action not the finish call":  func(m map[string]any) { m["content"] = m["content"].([]any)[:3] },
		"question not the user's":          func(m map[string]any) { item(m, 0)["source"] = "environment" },
		"reasoning_content of wrong type":  func(m map[string]any) { item(m, 1)["reasoning_content"] = 3 },
		"description of wrong type":        func(m map[string]any) { item(m, 1)["description"] = []any{} },
		"observation before any action":    func(m map[string]any) { m["content"] = append(m["content"].([]any)[:1], m["content"].([]any)[2:]...) },
		"kwargs not an object":             func(m map[string]any) { item(m, 1)["kwargs"] = "Lantern Museum" },
		"message_action without content":   func(m map[string]any) { item(m, 1)["class_"] = "message_action"; delete(item(m, 1), "function") },
		"details not an object":            func(m map[string]any) { m["details"] = "none" },
		"content not a list":               func(m map[string]any) { m["content"] = map[string]any{} },
		"text_observation without content": func(m map[string]any) { delete(item(m, 2), "content") },
	}
	for name, fn := range adpBreaks {
		if err := adpCheck(edit(adpLine, fn)); err == nil {
			t.Errorf("adp, %s: passed", name)
		}
	}
	atifBreaks := map[string]func(m map[string]any){
		"no schema_version":         func(m map[string]any) { delete(m, "schema_version") },
		"unknown schema_version":    func(m map[string]any) { m["schema_version"] = "ATIF-v2.0" },
		"no agent":                  func(m map[string]any) { delete(m, "agent") },
		"agent without version":     func(m map[string]any) { delete(m["agent"].(map[string]any), "version") },
		"no steps":                  func(m map[string]any) { m["steps"] = []any{} },
		"step ids out of order":     func(m map[string]any) { step(m, 1)["step_id"] = 3 },
		"step id zero":              func(m map[string]any) { step(m, 0)["step_id"] = 0 },
		"source outside enum":       func(m map[string]any) { step(m, 1)["source"] = "assistant" },
		"step without message":      func(m map[string]any) { delete(step(m, 2), "message") },
		"tool_calls on a user step": func(m map[string]any) { step(m, 1)["tool_calls"] = step(m, 2)["tool_calls"] },
		"reasoning on a user step":  func(m map[string]any) { step(m, 1)["reasoning_content"] = "r" },
		"metrics on a system step":  func(m map[string]any) { step(m, 0)["metrics"] = map[string]any{} },
		"source_call_id of no call": func(m map[string]any) {
			step(m, 2)["observation"].(map[string]any)["results"].([]any)[0].(map[string]any)["source_call_id"] = "zzz"
		},
		"result answering the next step": func(m map[string]any) { step(m, 2)["tool_calls"] = step(m, 3)["tool_calls"] },
		"tool call without arguments":    func(m map[string]any) { delete(step(m, 2)["tool_calls"].([]any)[0].(map[string]any), "arguments") },
		"undeclared function": func(m map[string]any) {
			step(m, 2)["tool_calls"].([]any)[0].(map[string]any)["function_name"] = "browse"
		},
		"arguments the tool does not take": func(m map[string]any) {
			step(m, 2)["tool_calls"].([]any)[0].(map[string]any)["arguments"] = map[string]any{"entity": 3}
		},
		"call id used twice":             func(m map[string]any) { step(m, 3)["tool_calls"] = step(m, 2)["tool_calls"] },
		"a field ATIF does not have":     func(m map[string]any) { step(m, 2)["thought"] = "t" },
		"logprobs not numbers":           func(m map[string]any) { step(m, 2)["metrics"].(map[string]any)["logprobs"] = []any{"x"} },
		"token ids not integers":         func(m map[string]any) { step(m, 2)["metrics"].(map[string]any)["prompt_token_ids"] = []any{1.5} },
		"negative llm_call_count":        func(m map[string]any) { step(m, 2)["llm_call_count"] = -1 },
		"metrics with no llm call":       func(m map[string]any) { step(m, 2)["llm_call_count"] = 0 },
		"total_steps not the step count": func(m map[string]any) { m["final_metrics"].(map[string]any)["total_steps"] = 9 },
		"totals not the steps' sums":     func(m map[string]any) { m["final_metrics"].(map[string]any)["total_prompt_tokens"] = 1 },
		"observation without results":    func(m map[string]any) { step(m, 2)["observation"] = map[string]any{} },
	}
	for name, fn := range atifBreaks {
		if err := atifCheck(edit(atifLine, fn)); err == nil {
			t.Errorf("atif, %s: passed", name)
		}
	}
}

// TestInterchangeGolden compares the adp and atif files of every view, and ADP's
// metadata, with their golden files (go test ./export -update rewrites them).
func TestInterchangeGolden(t *testing.T) {
	dir, res := exportInterchange(t, interchangeKept())
	got := map[string][]byte{}
	for _, f := range res.Files {
		if f.Format == "adp" || f.Format == "atif" || f.Format == "adp-metadata" {
			got[f.Path] = readFile(t, filepath.Join(dir, f.Path))
		}
	}
	checkGolden(t, filepath.Join(goldenDir, "interchange"), got)
}
