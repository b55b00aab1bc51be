package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/chattemplate"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// The published chat templates in ../shared/data/chat-templates (its README names each
// source), by the name the tests report.
var publishedTemplates = map[string]string{
	"qwen3":            "trl-qwen3.jinja",
	"qwen3-training":   "trl-qwen3_training.jinja",
	"qwen2.5":          "trl-qwen2_5.jinja",
	"qwen2.5-training": "trl-qwen2_5_training.jinja",
	"llama3.1":         "trl-llama3_1.jinja",
	"hermes-vllm":      "vllm-tool_chat_template_hermes.jinja",
}

// templateRow is one conversation as apply_chat_template receives it.
type templateRow struct {
	Messages []map[string]any `json:"messages"`
	Tools    any              `json:"tools"`
}

// rendered is one row rendered by jscheck/render.mjs.
type rendered struct {
	Text  string   `json:"text"`
	Spans [][2]int `json:"spans"`
	Error string   `json:"error"`
}

// jsNode returns node and skips t unless the module mod is installed in jscheck.
func jsNode(t *testing.T, mods ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	for _, mod := range mods {
		if _, err := os.Stat(filepath.Join("..", "jscheck", "node_modules", mod)); err != nil {
			t.Skipf("%s is not installed: run make jsdeps", mod)
		}
	}
	return node
}

// runJSON runs prog (node or python3) with args, in on its standard input when not nil
// and its standard error the test's, and decodes what it prints as JSON into v.
func runJSON(t *testing.T, v any, in []byte, prog string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), prog, args...)
	if in != nil {
		cmd.Stdin = bytes.NewReader(in)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatal(err)
	}
}

// renderRequest is the request render.mjs and render.py read: the templates, the rows
// and the special tokens.
func renderRequest(t *testing.T, templates map[string]string, rows []templateRow) []byte {
	t.Helper()
	req, err := json.Marshal(map[string]any{"templates": templates, "rows": rows,
		"tokens": map[string]string{"bos_token": "<s>", "eos_token": "</s>"}})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// templatePaths returns the published templates, skipping t without the shared data.
func templatePaths(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, file := range publishedTemplates {
		out[name] = shareddata.Path(t, "chat-templates/"+file)
	}
	return out
}

// renderJS renders rows through each template with @huggingface/jinja (jscheck/render.mjs).
func renderJS(t *testing.T, templates map[string]string, rows []templateRow) map[string][]rendered {
	t.Helper()
	node := jsNode(t, "@huggingface/jinja")
	var got map[string][]rendered
	runJSON(t, &got, renderRequest(t, templates, rows), node, filepath.Join("..", "jscheck", "render.mjs"), "render")
	for name := range templates {
		if len(got[name]) != len(rows) {
			t.Fatalf("%s: %d renderings of %d rows", name, len(got[name]), len(rows))
		}
	}
	return got
}

// renderPy renders rows through each template with Python's Jinja2 as transformers does
// (jscheck/render.py), or returns nil when python3 or jinja2 is not installed (Debian:
// apt-get install python3-jinja2).
func renderPy(t *testing.T, templates map[string]string, rows []templateRow) map[string][]rendered {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Log("python3 is not installed: the renderings are not compared with Jinja2's")
		return nil
	}
	if err := exec.CommandContext(t.Context(), py, "-c", "import jinja2").Run(); err != nil {
		t.Log("Python's jinja2 is not installed (apt-get install python3-jinja2): the renderings are not compared with Jinja2's")
		return nil
	}
	var got map[string][]rendered
	runJSON(t, &got, renderRequest(t, templates, rows), py, filepath.Join("..", "jscheck", "render.py"))
	return got
}

// rowJSON is a row's messages and tools as JSON, as the Go engine's RenderJSON takes
// them (the same bytes render.mjs and render.py receive).
func rowJSON(t *testing.T, r templateRow) ([]byte, []byte) {
	t.Helper()
	msgs, err := json.Marshal(r.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tools == nil {
		return msgs, nil
	}
	tools, err := json.Marshal(r.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return msgs, tools
}

// mergeJS reads JSONL files with DuckDB's read_json inference (jscheck/render.mjs merge):
// the rows as a datasets load sees them, every object holding the union of the keys
// found at its place, missing ones null.
func mergeJS(t *testing.T, paths ...string) map[string][]map[string]any {
	t.Helper()
	node := jsNode(t, "@duckdb/node-api")
	var got map[string][]map[string]any
	runJSON(t, &got, nil, node, append([]string{filepath.Join("..", "jscheck", "render.mjs"), "merge"}, paths...)...)
	return got
}

// probeTraits renders the probe conversation through each template and reads its traits.
func probeTraits(t *testing.T, templates map[string]string) map[string]TemplateTraits {
	t.Helper()
	var tools []any
	data, _ := json.Marshal(ProbeTools())
	json.Unmarshal(data, &tools)
	out := map[string]TemplateTraits{}
	for name, rs := range renderJS(t, templates, []templateRow{{Messages: ProbeMessages(), Tools: tools}}) {
		var err error
		if rs[0].Error != "" {
			err = errors.New(rs[0].Error)
		}
		out[name] = ProbeTemplate(rs[0].Text, rs[0].Spans, err)
	}
	return out
}

// conversationalFormats are the JSONL formats whose rows are conversations.
var conversationalFormats = []string{"openai-chat", "openai-tools", "hf-tools", "axolotl-chat", "sharegpt", "sharegpt-tools", "agentgym"}

// reasoningFormats are the conversational formats that carry a step's reasoning text
// where a template reads it: reasoning_content on the assistant messages (openai-chat,
// openai-tools, axolotl-chat, hf-tools) or thought words in the content (sharegpt,
// sharegpt-tools). agentgym's reasoning_content is not among them: AgentGym's trainer
// reads from, loss and value only (toChat), so only export.reasoning inline trains on it.
var reasoningFormats = []string{"openai-chat", "openai-tools", "axolotl-chat", "hf-tools", "sharegpt", "sharegpt-tools"}

// toolFormats are the formats whose actions are tool calls.
var toolFormats = []string{"openai-tools", "hf-tools", "sharegpt-tools"}

// toChat turns a row of format into the messages and tools its trainer hands to
// apply_chat_template: TRL reads messages as they are and parses a tools string
// (json.loads); AgentGym's trainer maps human and gpt to user and assistant;
// LLaMA-Factory's sharegpt converter maps system, human, gpt, observation and
// function_call to its roles, and its function formatter reads a function_call as the
// text outside the tool-call words (or the thought words) and the call's JSON
// (llamaFactoryCall), which in apply_chat_template's terms is an assistant turn with
// that text as content and the call as tool_calls; an observation after a call is the
// call's tool turn, any other a user turn (LLaMA-Factory formats it as a user turn).
func toChat(t *testing.T, format string, row map[string]any) templateRow {
	t.Helper()
	var out templateRow
	switch format {
	case "openai-chat", "axolotl-chat", "openai-tools", "hf-tools":
		for _, m := range row["messages"].([]any) {
			out.Messages = append(out.Messages, m.(map[string]any))
		}
		out.Tools = row["tools"]
		if s, ok := out.Tools.(string); ok {
			// TRL's json.loads: the definitions with their keys in the file's order.
			if !json.Valid([]byte(s)) {
				t.Fatalf("%s: tools %q are not JSON", format, s)
			}
			out.Tools = json.RawMessage(s)
		}
	case "agentgym":
		for _, x := range row["conversations"].([]any) {
			m := x.(map[string]any)
			role := map[string]string{"human": RoleUser, "gpt": RoleAssistant}[m["from"].(string)]
			out.Messages = append(out.Messages, map[string]any{"role": role, "content": m["value"]})
		}
	case "sharegpt", "sharegpt-tools":
		if s, ok := row["system"].(string); ok && s != "" {
			out.Messages = append(out.Messages, map[string]any{"role": RoleSystem, "content": s})
		}
		if s, ok := row["tools"].(string); ok && s != "" {
			if !json.Valid([]byte(s)) { // LLaMA-Factory's json.loads
				t.Fatalf("%s: tools %q are not JSON", format, s)
			}
			out.Tools = json.RawMessage(s)
		}
		afterCall := false
		for i, x := range row["conversations"].([]any) {
			m := x.(map[string]any)
			from, value := m["from"].(string), m["value"].(string)
			switch from {
			case "system":
				out.Messages = append(out.Messages, map[string]any{"role": RoleSystem, "content": value})
			case "human":
				out.Messages = append(out.Messages, map[string]any{"role": RoleUser, "content": value})
			case "observation":
				if afterCall {
					out.Messages = append(out.Messages, map[string]any{"role": RoleTool, "content": value})
				} else {
					out.Messages = append(out.Messages, map[string]any{"role": RoleUser, "content": value})
				}
			case "gpt":
				out.Messages = append(out.Messages, map[string]any{"role": RoleAssistant, "content": value})
			case "function_call":
				text, calls, err := llamaFactoryCall(value)
				if err != nil {
					t.Fatalf("%s turn %d: %v", format, i, err)
				}
				var tc []any
				for k, c := range calls {
					var args any // the call's arguments as apply_chat_template takes them: an object
					if err := json.Unmarshal([]byte(c.arguments), &args); err != nil {
						t.Fatalf("%s turn %d: arguments %q: %v", format, i, c.arguments, err)
					}
					tc = append(tc, map[string]any{"id": fmt.Sprintf("call%d_%d", i, k), "type": "function",
						"function": map[string]any{"name": c.name, "arguments": args}})
				}
				out.Messages = append(out.Messages, map[string]any{"role": RoleAssistant, "content": strings.TrimSuffix(text, "\n"), "tool_calls": tc})
			default:
				t.Fatalf("%s turn %d: from %q", format, i, from)
			}
			afterCall = from == "function_call"
		}
	default:
		t.Fatalf("toChat: %s is not conversational", format)
	}
	return out
}

// templateEpisodes is the stream the template tests render: toolEpisodes' HotpotQA and
// FEVER episodes with lookups and invalid actions, each question its own (so that a row
// finds its episode by its question), and a reasoning text on every step of every
// second episode, as a reasoning model returns it (several lines, quotes).
func templateEpisodes(n int) func() ([]pipeline.Episode, func() iter.Seq2[pipeline.Episode, error]) {
	mod := func(i int, ep *pipeline.Episode) {
		if i%7 == 3 && len(ep.Steps) > 2 {
			ep.Steps[1].Action, ep.Steps[1].ActionType, ep.Steps[1].Argument = "Searhc[x]", pipeline.ActionInvalid, ""
			ep.Steps[1].Observation = "Invalid action: Searhc[x]"
		}
		ep.Question = strings.TrimSuffix(ep.Question, "?") + fmt.Sprintf(" number %d?", i)
		if i%2 == 0 {
			for k := range ep.Steps {
				ep.Steps[k].Reasoning = fmt.Sprintf("Reasoning %d.%d: the \"question\" asks\nabout step %d.", i, k+1, k+1)
			}
		}
	}
	return func() ([]pipeline.Episode, func() iter.Seq2[pipeline.Episode, error]) {
		var eps []pipeline.Episode
		for ep := range episodetest.Stream(n, mod)() {
			eps = append(eps, ep)
		}
		return eps, func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) }
	}
}

// argKeys are the argument names of the three tools.
var argKeys = []string{"entity", "keyword", "answer"}

// checkRendered checks one rendered row of format in view against the episode it came
// from: every thought (where the template renders content beside a call), every
// reasoning text the format carries (where the template renders reasoning), every action
// (tool formats: its call's name and argument with its value) once, no argument key a
// step did not pass and no null, and under a template with generation spans, spans that
// are exactly the assistant turns.
func checkRendered(format, view string, ep pipeline.Episode, tr TemplateTraits, r rendered, assistants int) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	text := r.Text
	q := strings.Index(text, QuestionLine(ep.Task, ep.Question))
	if q < 0 {
		return []string{"the question line is not rendered"}
	}
	body := text[q:] // after the tool definitions, which name every argument
	if strings.Contains(text, "null") || strings.Contains(text, "None") {
		bad("a null is rendered")
	}
	isTool := slices.Contains(toolFormats, format)
	steps := ep.Steps
	calls := map[string]int{}
	for _, s := range steps {
		if isTool && s.ActionType != pipeline.ActionInvalid {
			name, args, _ := tool.FromAction(s.ActionType, s.Argument)
			calls[name]++
			key := map[string]string{tool.Search: "entity", tool.Lookup: "keyword", tool.Finish: "answer"}[name]
			v := jsonString(s.Argument)
			re := regexp.MustCompile(`"` + key + `": ?` + regexp.QuoteMeta(v))
			if tr.StringArgs || format == "sharegpt-tools" {
				if n := len(re.FindAllStringIndex(body, -1)); n != countArg(steps, s.ActionType, s.Argument) {
					bad("argument %s of %s rendered %d times, want %d (%s)", v, name, n, countArg(steps, s.ActionType, s.Argument), args)
				}
			} else if !strings.Contains(body, s.Argument) {
				bad("argument %q of %s is not rendered", s.Argument, name)
			}
		} else if !isTool && strings.Count(body, s.Action) < 1 {
			bad("action %q is not rendered", s.Action)
		}
		if view == ViewReAct && s.Thought != "" && (tr.Thought || !isTool || s.ActionType == pipeline.ActionInvalid) {
			if n := strings.Count(body, s.Thought); n != 1 {
				bad("thought %q rendered %d times", s.Thought, n)
			}
		}
		if view == ViewReAct && s.Reasoning != "" && slices.Contains(reasoningFormats, format) {
			// A reasoning text in content (sharegpt's thought words) shows under every
			// template; reasoning_content only where the template reads it.
			if n := strings.Count(body, s.Reasoning); n > 1 || tr.Reasoning && n != 1 {
				bad("reasoning %q rendered %d times", s.Reasoning, n)
			}
		}
	}
	if isTool {
		for name, want := range calls {
			if n := strings.Count(body, `"name": "`+name+`"`); n != want {
				bad("call %s rendered %d times, want %d", name, n, want)
			}
		}
	}
	if isTool && (tr.StringArgs || format == "sharegpt-tools") {
		for _, k := range argKeys {
			want := 0
			for _, s := range steps {
				if tk := map[string]string{pipeline.ActionSearch: "entity", pipeline.ActionLookup: "keyword", pipeline.ActionFinish: "answer"}[s.ActionType]; tk == k {
					want++
				}
			}
			if n := strings.Count(body, `"`+k+`"`); n != want {
				bad("argument key %q rendered %d times, want %d (the steps' calls)", k, n, want)
			}
		}
	}
	if tr.Generation {
		if len(r.Spans) != assistants {
			bad("%d generation spans, want one per assistant turn (%d)", len(r.Spans), assistants)
		}
		for _, sp := range r.Spans {
			s := text[sp[0]:sp[1]]
			if strings.Contains(s, "Observation: ") || strings.Contains(s, QuestionLine(ep.Task, ep.Question)) {
				bad("generation span %q holds a user or observation turn", s)
			}
			for _, st := range steps {
				if st.Observation != "" && strings.Contains(s, st.Observation) {
					bad("generation span %q holds an observation", s)
				}
			}
		}
		var inSpans strings.Builder
		for _, sp := range r.Spans {
			inSpans.WriteString(text[sp[0]:sp[1]])
		}
		for _, st := range steps {
			if view == ViewReAct && (tr.Thought || !isTool) && !strings.Contains(inSpans.String(), st.Thought) {
				bad("thought %q is outside the generation spans", st.Thought)
			}
		}
	}
	return errs
}

// countArg counts the steps with this action.
func countArg(steps []pipeline.Step, typ, arg string) int {
	n := 0
	for _, s := range steps {
		if s.ActionType == typ && s.Argument == arg {
			n++
		}
	}
	return n
}

// assistantTurns counts a chat row's assistant turns.
func assistantTurns(c templateRow) int {
	n := 0
	for _, m := range c.Messages {
		if m["role"] == RoleAssistant {
			n++
		}
	}
	return n
}

// TestTemplatesRenderEveryRow renders every row of every conversational format, in the
// react and act views, through every published chat template with a real Jinja engine
// (@huggingface/jinja), as the rows are written and as a datasets load merges them
// (DuckDB's read_json inference), and checks each rendering (checkRendered). What a
// template cannot render at all (read off the probe conversation: Llama-3.1 and Hermes
// drop a thought beside a call, only Qwen3 reads reasoning_content, Qwen2.5 quotes
// string arguments) is reported, not counted against a row; a merged row must render as
// its written row does under every template that trains the format whole.
func TestTemplatesRenderEveryRow(t *testing.T) {
	const n = 16
	templates := templatePaths(t)
	traits := probeTraits(t, templates)
	for _, name := range slices.Sorted(maps.Keys(traits)) {
		tr := traits[name]
		t.Logf("%-17s %s", name, map[bool]string{true: "trains all of a ReAct tool trajectory", false: "cannot: " + tr.Shortfall(true)}[tr.Shortfall(true) == ""])
	}
	eps, kept := templateEpisodes(n)()
	byQuestion := map[string]pipeline.Episode{}
	for _, ep := range eps {
		byQuestion[QuestionLine(ep.Task, ep.Question)] = ep
	}
	cfg := pipeline.ExportConfig{Formats: conversationalFormats, System: "Use the tools.", Views: []string{ViewReAct, ViewAct},
		Weights: true, ObservationRole: true, CorrectOnly: true}
	res, dir := runExport(t, cfg, kept)
	var paths []string
	for _, f := range res.Files {
		if slices.Contains(conversationalFormats, f.Format) {
			paths = append(paths, filepath.Join(dir, f.Path))
		}
	}
	merged := mergeJS(t, paths...)
	// One rendering of every row, as written and as merged, under every template.
	type fileRows struct {
		f          File
		rows       []templateRow
		start, end int // the written rows' place in all; the merged rows follow at end
	}
	var files []fileRows
	var all []templateRow
	for _, f := range res.Files {
		if !slices.Contains(conversationalFormats, f.Format) {
			continue
		}
		p := filepath.Join(dir, f.Path)
		written := readJSONLRows(t, p)
		if len(merged[p]) != len(written) {
			t.Fatalf("%s: the merged read has %d rows, the file %d", f.Path, len(merged[p]), len(written))
		}
		fr := fileRows{f: f, start: len(all)}
		for i := range written {
			fr.rows = append(fr.rows, toChat(t, f.Format, written[i]))
		}
		all = append(all, fr.rows...)
		fr.end = len(all)
		for i := range written {
			all = append(all, toChat(t, f.Format, merged[p][i]))
		}
		files = append(files, fr)
	}
	got := renderJS(t, templates, all)
	// Three engines: @huggingface/jinja, the Go engine (internal/chattemplate, for
	// export.chat_template) and, where python3 and jinja2 are installed, Jinja2 set up as
	// transformers sets it up (jscheck/render.py, its generation extension recording the
	// spans). On every row as written they must agree byte for byte: text, spans and
	// failures. On the merged rows (nulls from a datasets load, which export.chat_template
	// never renders) they may part where a template touches a null — a dict looked up with
	// an undefined key (@huggingface/jinja raises), an undefined tested as iterable or a
	// loop over none (the Go engine differs) — and the differences are counted.
	goTemplates := map[string]*chattemplate.Template{}
	for name, p := range templates {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := chattemplate.Parse(p, string(src), map[string]any{"bos_token": "<s>", "eos_token": "</s>"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		goTemplates[name] = tpl
	}
	isMerged := make([]bool, len(all))
	for _, fr := range files {
		for i := fr.end; i < fr.end+len(fr.rows); i++ {
			isMerged[i] = true
		}
	}
	py := renderPy(t, templates, all)
	same := func(a, b rendered) bool {
		return (a.Error != "") == (b.Error != "") && a.Text == b.Text && slices.Equal(a.Spans, b.Spans)
	}
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		parted, checked := map[string]int{}, 0
		for i, row := range all {
			js := got[name][i]
			text, spans, err := goTemplates[name].RenderJSON(rowJSON(t, row))
			g := rendered{Text: text, Spans: spans}
			if err != nil {
				g = rendered{Error: err.Error()}
			}
			engines := map[string]rendered{"Go": g}
			if py != nil {
				engines["Jinja2"] = py[name][i]
			}
			for engine, r := range engines {
				if same(r, js) {
					continue
				}
				if isMerged[i] {
					parted[engine]++
					continue
				}
				if engine == "Go" && strings.Contains(goTemplates[name].Source, "tojson(indent") {
					// github.com/ardanlabs/jinja v1.8.0 writes tojson(indent=n) with
					// encoding/json: keys sorted, <, > and & escaped. Jinja2 keeps the
					// keys' order. Only Llama 3.x templates indent, and export.chat_template
					// refuses them (they drop the thought beside a call).
					parted["Go, tojson(indent)"]++
					continue
				}
				k := diffAt(r.Text, js.Text)
				t.Errorf("%s row %d: %s renders unlike @huggingface/jinja (%q / %q) at byte %d:\n %s %q\n JS %q\n spans %v %v",
					name, i, engine, r.Error, js.Error, k, engine, clipAt(r.Text, k), clipAt(js.Text, k), r.Spans, js.Spans)
			}
			checked++
		}
		t.Logf("%s: %d renderings compared (Go, @huggingface/jinja%s); on merged rows @huggingface/jinja parts from Go on %d, from Jinja2 on %d; Go's tojson(indent) parts on %d",
			name, checked, map[bool]string{true: ", Jinja2", false: ""}[py != nil], parted["Go"], parted["Jinja2"], parted["Go, tojson(indent)"])
	}
	total, reported := 0, 0
	for _, fr := range files {
		f := fr.f
		for _, name := range slices.Sorted(maps.Keys(templates)) {
			tr := traits[name]
			fails := map[string]int{}
			for i, row := range fr.rows {
				total++
				ep, ok := byQuestion[firstUser(row)]
				if !ok {
					t.Fatalf("%s row %d: question %q is no episode's", f.Path, i+1, firstUser(row))
				}
				r, m := got[name][fr.start+i], got[name][fr.end+i]
				if r.Error != "" {
					fails["raises: "+r.Error]++
					continue
				}
				for _, e := range checkRendered(f.Format, f.View, ep, tr, r, assistantTurns(row)) {
					if reported++; reported <= 5 {
						t.Errorf("%s row %d under %s: %s", f.Path, i+1, name, e)
					}
				}
				switch {
				case m.Error != "":
					fails["raises after a datasets load: "+m.Error]++
				case m.Text != r.Text || !slices.Equal(m.Spans, r.Spans):
					fails["renders differently after a datasets load"]++
					if loadable(f.Format) && trainsWhole(tr, f.Format) {
						k := diffAt(r.Text, m.Text)
						if reported++; reported <= 5 {
							t.Errorf("%s row %d under %s: merged rendering differs at byte %d:\n written %q\n merged  %q", f.Path, i+1, name, k,
								clipAt(r.Text, k), clipAt(m.Text, k))
						}
					}
				}
			}
			for why, k := range fails {
				if loadable(f.Format) && trainsWhole(tr, f.Format) && !strings.HasPrefix(why, "renders differently") {
					t.Errorf("%s under %s: %d rows: %s", f.Path, name, k, why)
				} else {
					t.Logf("%s under %s (%s): %d rows: %s", f.Path, name, tr.Shortfall(true), k, why)
				}
			}
		}
	}
	if total == 0 {
		t.Fatal("rendered nothing")
	}
	if reported > 5 {
		t.Errorf("%d failures in all", reported)
	}
	t.Logf("%d renderings checked", total)
}

// loadable reports whether format is meant for a datasets load: every conversational
// format but openai-tools, which is OpenAI's upload format (its tools array is OpenAI's
// schema, objects whose parameters differ per function; TRL reads hf-tools).
func loadable(format string) bool { return format != "openai-tools" }

// trainsWhole reports whether a template with tr renders rows of format whole: the text
// formats under any template that renders messages, the tool formats under templates
// with no shortfall.
func trainsWhole(tr TemplateTraits, format string) bool {
	if !slices.Contains(toolFormats, format) || format == "sharegpt-tools" {
		return tr.Error == ""
	}
	return tr.Shortfall(false) == ""
}

// diffAt is the first byte where a and b differ.
func diffAt(a, b string) int {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	return k
}

// clipAt is s around byte k.
func clipAt(s string, k int) string {
	return s[max(0, k-80):min(len(s), k+120)]
}

// firstUser is the question line: the first user turn, after the system message where
// a format puts it there (agentgym).
func firstUser(c templateRow) string {
	for _, m := range c.Messages {
		if m["role"] == RoleUser {
			s, _ := m["content"].(string)
			if i := strings.LastIndex(s, "\n\n"); i >= 0 {
				s = s[i+2:]
			}
			return s
		}
	}
	return ""
}

// TestTemplatesRenderArrowAndParquetColumns reads the tool columns of the Arrow file and
// a Parquet file with readers that share no code with the writer (apache-arrow, DuckDB;
// jscheck/read.mjs), turns each row into apply_chat_template's arguments as docs/formats.md
// says (each tool's parameters parsed from JSON, empty tool_calls, tool_call_id and name
// left out, reasoning as reasoning_content), and renders them through every published
// template: each rendering equals that of the example's hf-tools row, so no null or
// empty key of the columns reaches a rendered row.
func TestTemplatesRenderArrowAndParquetColumns(t *testing.T) {
	const n = 10
	templates := templatePaths(t)
	node := jsNode(t, "apache-arrow", "@duckdb/node-api", "@huggingface/jinja")
	_, kept := templateEpisodes(n)()
	cfg := pipeline.ExportConfig{Formats: []string{"hf-tools", "arrow-file", "parquet"}, System: "Use the tools.", CorrectOnly: true}
	res, dir := runExport(t, cfg, kept)
	var hfRows []map[string]any
	paths := []string{filepath.Join(dir, "dataset.arrow")}
	for _, f := range res.Files {
		switch f.Format {
		case "hf-tools":
			hfRows = append(hfRows, readJSONLRows(t, filepath.Join(dir, f.Path))...)
		case "parquet":
			paths = append(paths, filepath.Join(dir, f.Path))
		}
	}
	var read map[string][]map[string]any
	runJSON(t, &read, nil, node, append([]string{filepath.Join("..", "jscheck", "read.mjs")}, paths...)...)
	byQuestion := map[string]templateRow{}
	for _, r := range hfRows {
		c := toChat(t, "hf-tools", r)
		byQuestion[firstUser(c)] = c
	}
	var rows []templateRow
	var want []templateRow
	for _, p := range paths {
		if len(read[p]) == 0 {
			t.Fatalf("%s: no rows read", p)
		}
		for _, r := range read[p] {
			c := columnsToChat(t, r)
			w, ok := byQuestion[firstUser(c)]
			if !ok {
				t.Fatalf("%s: question %q has no hf-tools row", p, firstUser(c))
			}
			rows, want = append(rows, c), append(want, w)
		}
	}
	got := renderJS(t, templates, append(rows, want...))
	for name, rs := range got {
		for i := range rows {
			c, w := rs[i], rs[len(rows)+i]
			if c.Error != w.Error || c.Text != w.Text || !slices.Equal(c.Spans, w.Spans) {
				k := diffAt(c.Text, w.Text)
				t.Errorf("%s: column row %d renders unlike its hf-tools row (%q / %q) at byte %d:\n columns %q\n hf-tools %q",
					name, i, c.Error, w.Error, k, clipAt(c.Text, k), clipAt(w.Text, k))
			}
		}
	}
	t.Logf("%d column rows rendered through %d templates", len(rows), len(templates))
}

// columnsToChat turns a row of the tool columns (as read.mjs prints them) into
// apply_chat_template's messages and tools, as docs/formats.md ("Loading the files") says.
func columnsToChat(t *testing.T, r map[string]any) templateRow {
	t.Helper()
	var c templateRow
	for _, x := range r["tool_messages"].([]any) {
		m := map[string]any{}
		for k, v := range x.(map[string]any) {
			switch {
			case k == "trainable":
			case v == nil || v == "":
			case k == "tool_calls" && len(v.([]any)) == 0:
			case k == "reasoning":
				m["reasoning_content"] = v
			default:
				m[k] = v
			}
		}
		if _, ok := m["content"]; !ok {
			m["content"] = ""
		}
		c.Messages = append(c.Messages, m)
	}
	// The columns' struct fields in their order, the parameters json.loads'd in theirs.
	type function struct {
		Name        any             `json:"name"`
		Description any             `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type def struct {
		Type     any      `json:"type"`
		Function function `json:"function"`
	}
	var tools []def
	for _, x := range r["tools"].([]any) {
		d := x.(map[string]any)
		fn := d["function"].(map[string]any)
		params := fn["parameters"].(string)
		if !json.Valid([]byte(params)) {
			t.Fatalf("parameters %q are not JSON", params)
		}
		tools = append(tools, def{Type: d["type"], Function: function{Name: fn["name"], Description: fn["description"], Parameters: json.RawMessage(params)}})
	}
	c.Tools = tools
	return c
}
