package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// jsRow is a row as jscheck/read.mjs prints it.
type jsRow struct {
	ID       string `json:"id"`
	NTokens  int64  `json:"n_tokens"`
	Messages []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		Trainable bool   `json:"trainable"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Parameters  string `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolMessages []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
		Name       string `json:"name"`
		Trainable  bool   `json:"trainable"`
	} `json:"tool_messages"`
}

// toExample is the part of an Example the JavaScript readers report.
func (r jsRow) toExample(t *testing.T) Example {
	t.Helper()
	ex := Example{ID: r.ID, Tokens: r.NTokens, Tools: []tool.Def{}, ToolMessages: []ToolMessage{}, Messages: []Message{}}
	for _, m := range r.Messages {
		ex.Messages = append(ex.Messages, Message{Role: m.Role, Content: m.Content, Trainable: m.Trainable})
	}
	for _, d := range r.Tools {
		def := tool.Def{Type: d.Type, Function: tool.Function{Name: d.Function.Name, Description: d.Function.Description}}
		if err := json.Unmarshal([]byte(d.Function.Parameters), &def.Function.Parameters); err != nil {
			t.Fatalf("row %s: parameters %q: %v", r.ID, d.Function.Parameters, err)
		}
		ex.Tools = append(ex.Tools, def)
	}
	for _, m := range r.ToolMessages {
		tm := ToolMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name, Trainable: m.Trainable}
		for _, c := range m.ToolCalls {
			if c.Type != "function" {
				t.Errorf("row %s: call type %q", r.ID, c.Type)
			}
			tm.ToolCalls = append(tm.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		ex.ToolMessages = append(ex.ToolMessages, tm)
	}
	return ex
}

// TestJSReadersReadToolColumns reads the Arrow file, an Arrow stream shard and a Parquet
// shard with readers that share no code with the writer (apache-arrow for JavaScript,
// DuckDB; make jsdeps installs them) and gets the same tool columns the Go readers decode.
func TestJSReadersReadToolColumns(t *testing.T) {
	node := jsNode(t, "apache-arrow", "@duckdb/node-api")
	cfg := pipeline.ExportConfig{Formats: []string{"arrow", "arrow-file", "parquet"}, System: "Use the tools.", ValidationFraction: 0.2,
		SplitSeed: 1, CorrectOnly: true}
	res, dir := runExport(t, cfg, toolEpisodes(30))
	paths := map[string][]Example{filepath.Join(dir, "dataset.arrow"): readExamples(t, "arrow-file", filepath.Join(dir, "dataset.arrow"))}
	for _, f := range res.Files {
		p := filepath.Join(dir, f.Path)
		if (f.Format == "arrow" || f.Format == "parquet") && f.Split == SplitTrain {
			paths[p] = readExamples(t, f.Format, p)
		}
	}
	if len(paths) != 3 {
		t.Fatalf("want an arrow file, an arrow stream and a parquet file, got %v", paths)
	}
	args := []string{filepath.Join("..", "jscheck", "read.mjs")}
	for p := range paths {
		args = append(args, p)
	}
	var got map[string][]jsRow
	runJSON(t, &got, nil, node, args...)
	for p, want := range paths {
		rows := got[p]
		if len(rows) != len(want) || len(rows) == 0 {
			t.Errorf("%s: JavaScript read %d rows, Go %d", p, len(rows), len(want))
			continue
		}
		for i, r := range rows {
			w := want[i]
			w = Example{ID: w.ID, Tokens: w.Tokens, Messages: w.Messages, Tools: w.Tools, ToolMessages: w.ToolMessages}
			if g := r.toExample(t); !reflect.DeepEqual(g, w) {
				t.Errorf("%s row %d:\n JavaScript %+v\n Go         %+v", filepath.Base(p), i, g, w)
			}
		}
	}
}

// everyColumnEpisodes feeds every view: ReAct trajectories with tool calls (some with an
// invalid action), CoT answers for the cot view, reasoning text and calls with
// log-probabilities and token ids, FEVER and HotpotQA, and ALFWorld and WebShop games
// with their rewards (the reward column, null for the others).
func everyColumnEpisodes(n int) func() iter.Seq2[pipeline.Episode, error] {
	games := gameEpisodes()
	return episodetest.Stream(n, func(i int, ep *pipeline.Episode) {
		switch {
		case i%6 == 1:
			g := games[(i/6)%len(games)]
			g.ID, g.QuestionID = ep.ID, ep.QuestionID
			*ep = g
		case i%7 == 3 && len(ep.Steps) > 2:
			ep.Steps[1].Action, ep.Steps[1].ActionType, ep.Steps[1].Argument = "Searhc[x]", pipeline.ActionInvalid, ""
			ep.Steps[1].Observation = "Invalid action: Searhc[x]"
		case i%5 == 4:
			last := ep.Steps[len(ep.Steps)-1]
			ep.Method, ep.Steps = pipeline.MethodCoT, []pipeline.Step{{Thought: "A chain: " + last.Thought, Action: last.Action,
				ActionType: pipeline.ActionFinish, Argument: last.Argument}}
		}
		for k := range ep.Steps {
			if k%2 == 0 {
				ep.Steps[k].Reasoning = fmt.Sprintf("Reasoning %d of step %d: \"quoted\"\n", i, k)
				ep.Steps[k].Calls = []pipeline.Call{{Model: "m", Usage: pipeline.Usage{PromptTokens: 100 + k, CompletionTokens: 9, TotalTokens: 109 + k},
					Reasoning: ep.Steps[k].Reasoning, Logprobs: []float64{-0.5, -1.25e-7, -3}, PromptTokenIDs: []int64{151644, int64(i)},
					CompletionTokenIDs: []int64{785, int64(k)}}}
			}
		}
	})
}

// goRows decodes a binary export file with the Go Arrow readers into one JSON object per
// row, the columns by name (arrow's RecordToJSON).
func goRows(t *testing.T, path, format string) []map[string]any {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(binaryAsJSON(t, path, format)), []byte("\n"))
	var rows []map[string]any
	for _, l := range lines {
		if !bytes.HasPrefix(l, []byte("{")) {
			continue // the schema, printed before the rows
		}
		rows = append(rows, normalizeJSON(t, l).(map[string]any))
	}
	return rows
}

// normalizeJSON decodes JSON with every number as a float64 (token ids, counts and
// scores alike are exact in a double here), so that the readers' spellings of one number
// (1, 1.0, 1e0) compare equal.
func normalizeJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %.200s", err, data)
	}
	return v
}

// TestJSReadersReadEveryColumn exports every view to Parquet, the Arrow directory and the
// Arrow file, and reads every column of every file with readers that share no code with
// the writer: each Parquet shard with hyparquet (with hyparquet-compressors) and with
// DuckDB, each Arrow file with apache-arrow. Every reader reads every row, and every
// value equals what the Go readers decode (TestRunRoundTrip holds those to what was
// written). Arrow JS has no Parquet reader, so the Parquet files' third reader is the
// Arrow files' own.
func TestJSReadersReadEveryColumn(t *testing.T) {
	node := jsNode(t, "apache-arrow", "@duckdb/node-api", "hyparquet", "hyparquet-compressors")
	cfg := pipeline.ExportConfig{Formats: []string{"arrow", "arrow-file", "parquet"}, Views: Views, System: "Use the tools.",
		ValidationFraction: 0.25, SplitSeed: 1, ShardRows: 20}
	res, dir := runExport(t, cfg, everyColumnEpisodes(60))
	formats := map[string]string{}
	for _, f := range res.Files {
		if f.Format == "parquet" || f.Format == "arrow-file" || (f.Format == "arrow" && strings.HasSuffix(f.Path, ".arrow")) {
			formats[filepath.Join(dir, f.Path)] = f.Format
		}
	}
	args := []string{filepath.Join("..", "jscheck", "columns.mjs")}
	for p := range formats {
		args = append(args, p)
	}
	var got map[string]map[string]json.RawMessage
	runJSON(t, &got, nil, node, args...)
	readers := map[string]int{}
	for p, format := range formats {
		want := goRows(t, p, format)
		if len(want) == 0 && format == "parquet" {
			continue // an empty split's file; its readers still must not fail
		}
		wantReaders := []string{"apache-arrow"}
		if format == "parquet" {
			wantReaders = []string{"hyparquet", "duckdb"}
		}
		for _, reader := range wantReaders {
			raw, ok := got[p][reader]
			if !ok {
				t.Errorf("%s: %s did not report", p, reader)
				continue
			}
			var failed struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(raw, &failed) == nil && failed.Error != "" {
				t.Errorf("%s: %s failed: %s", p, reader, failed.Error)
				continue
			}
			rows, _ := normalizeJSON(t, raw).([]any)
			if len(rows) != len(want) {
				t.Errorf("%s: %s read %d rows, Go %d", p, reader, len(rows), len(want))
				continue
			}
			for i, r := range rows {
				row := r.(map[string]any)
				for col, w := range want[i] {
					if g, ok := row[col]; !ok || !reflect.DeepEqual(g, w) {
						t.Errorf("%s row %d column %s: %s read\n %.300v\nGo read\n %.300v", filepath.Base(p), i, col, reader, g, w)
					}
				}
				if len(row) != len(want[i]) {
					t.Errorf("%s row %d: %s read %d columns, Go %d", filepath.Base(p), i, reader, len(row), len(want[i]))
				}
			}
			readers[reader] += len(rows)
		}
	}
	t.Logf("rows read: %v, from %d files", readers, len(formats))
	for _, r := range []string{"hyparquet", "duckdb", "apache-arrow"} {
		if readers[r] == 0 {
			t.Errorf("%s read no row", r)
		}
	}
}
