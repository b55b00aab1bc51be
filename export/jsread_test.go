package export

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

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
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	for _, mod := range []string{"apache-arrow", "@duckdb/node-api"} {
		if _, err := os.Stat(filepath.Join("..", "jscheck", "node_modules", mod)); err != nil {
			t.Skipf("%s is not installed: run make jsdeps", mod)
		}
	}
	cfg := pipeline.ExportConfig{Formats: []string{"arrow", "arrow-file", "parquet"}, System: "Use the tools.", ValidationFraction: 0.2,
		SplitSeed: 1, CorrectOnly: true}
	res, dir := runExport(t, cfg, toolEpisodes(30))
	paths := map[string][]Example{filepath.Join(dir, "dataset.arrow"): readArrowFile(t, filepath.Join(dir, "dataset.arrow"))}
	for _, f := range res.Files {
		p := filepath.Join(dir, f.Path)
		switch {
		case f.Format == "arrow" && f.Split == SplitTrain:
			paths[p] = readArrowStream(t, p)
		case f.Format == "parquet" && f.Split == SplitTrain:
			paths[p] = readParquet(t, p)
		}
	}
	if len(paths) != 3 {
		t.Fatalf("want an arrow file, an arrow stream and a parquet file, got %v", paths)
	}
	args := []string{filepath.Join("..", "jscheck", "read.mjs")}
	for p := range paths {
		args = append(args, p)
	}
	cmd := exec.CommandContext(t.Context(), node, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jscheck/read.mjs: %v", err)
	}
	var got map[string][]jsRow
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
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
