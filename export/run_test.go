package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"gopkg.in/yaml.v3"

	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/pipeline"
)

var allFormats = []string{"openai-chat", "axolotl-chat", "completion", "alpaca", "sharegpt", "agentgym", "arrow", "arrow-file", "parquet"}

func runExport(t *testing.T, cfg pipeline.ExportConfig, kept func() iter.Seq2[pipeline.Episode, error]) (Result, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	res, err := Run(t.Context(), RunOptions{Config: cfg, Dir: dir, Kept: kept, Card: CardInfo{Task: "hotpotqa", Method: "react", Model: "test-model"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, dir
}

// expected renders what the exporter should have written for view, by split ("" = all).
func expected(t *testing.T, n int, cfg pipeline.ExportConfig, view, split string) []Example {
	t.Helper()
	var out []Example
	for i := range n {
		ep := episodetest.Synth(i)
		ex, err := Render(ep, view, RenderOptions{System: cfg.System, TrainObservations: cfg.TrainObservations})
		if err != nil {
			t.Fatal(err)
		}
		ex.Split = SplitOf(cfg.SplitSeed, ep.QuestionID, cfg.ValidationFraction)
		ex.Tokens = int64(ChatTokens(o200k(t), ex.Messages))
		if split == "" || ex.Split == split {
			out = append(out, ex)
		}
	}
	return out
}

func o200k(t *testing.T) bpe.Counter {
	t.Helper()
	c, err := bpe.Open("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readJSONLRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	r, closeFn, err := openJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	var rows []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s line %d: %v", path, len(rows)+1, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// readExamples reads back an Arrow stream ("arrow"), Arrow file ("arrow-file") or Parquet
// file ("parquet") with the Arrow readers and decodes its rows; an Arrow stream must carry
// the huggingface key in its schema metadata.
func readExamples(t *testing.T, format, path string) []Example {
	t.Helper()
	var out []Example
	schema := eachRecord(t, format, path, func(rec arrow.Record) {
		exs, err := DecodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, exs...)
	})
	if md := schema.Metadata(); format == "arrow" && md.FindKey("huggingface") < 0 {
		t.Errorf("%s: schema metadata has no huggingface key", path)
	}
	return out
}

// eachRecord reads an Arrow stream ("arrow"), Arrow file ("arrow-file") or Parquet file
// ("parquet") with the Arrow readers, calls each with its records in order (a record
// lives only through its call) and returns the file's schema.
func eachRecord(t *testing.T, format, path string, each func(arrow.Record)) *arrow.Schema {
	t.Helper()
	if format == "parquet" {
		tbl := readParquetTable(t, path)
		defer tbl.Release()
		tr := array.NewTableReader(tbl, 1000)
		defer tr.Release()
		for tr.Next() {
			each(tr.Record())
		}
		return tbl.Schema()
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	switch format {
	case "arrow":
		r, err := ipc.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer r.Release()
		for r.Next() {
			each(r.Record())
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return r.Schema()
	case "arrow-file":
		r, err := ipc.NewFileReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer r.Close()
		for i := range r.NumRecords() {
			rec, err := r.Record(i)
			if err != nil {
				t.Fatalf("%s record %d: %v", path, i, err)
			}
			each(rec)
		}
		return r.Schema()
	}
	t.Fatalf("%s: %s is not a binary format", path, format)
	return nil
}

// readParquetTable reads a Parquet file whole with the Arrow readers; the caller
// releases the table.
func readParquetTable(t *testing.T, path string) arrow.Table {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tbl
}

func compareExamples(t *testing.T, what string, got, want []Example) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d rows, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		w := want[i]
		w.spans = nil // where Render wrote each step; not a column
		w.src = nil   // the episode's steps, for the interchange formats; not a column
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("%s row %d:\ngot  %+v\nwant %+v", what, i, got[i], w)
			return
		}
	}
}

func filesOf(res Result, format, view, split string) []File {
	var out []File
	for _, f := range res.Files {
		if f.Format == format && f.View == view && f.Split == split {
			out = append(out, f)
		}
	}
	return out
}

func checkFileSums(t *testing.T, dir string, res Result) {
	t.Helper()
	for _, f := range res.Files {
		data, err := os.ReadFile(filepath.Join(dir, f.Path))
		if err != nil {
			t.Errorf("listed file: %v", err)
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 || int64(len(data)) != f.Bytes {
			t.Errorf("%s: sha256 %s bytes %d on disk, listed %s %d", f.Path, got, len(data), f.SHA256, f.Bytes)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind in the export dir: %s", e.Name())
		}
	}
}

func TestRunRoundTrip(t *testing.T) {
	const n = 60
	cfg := pipeline.ExportConfig{
		Formats: allFormats, Compression: "none", System: "Answer with Search, Lookup and Finish.", Weights: true,
		ValidationFraction: 0.3, SplitSeed: 3, Views: []string{ViewReAct, ViewAct, ViewStandard}, CorrectOnly: true,
	}
	res, dir := runExport(t, cfg, episodetest.Stream(n, nil))
	checkFileSums(t, dir, res)
	if res.Examples != n || res.Splits[SplitTrain]+res.Splits[SplitValidation] != n || res.Splits[SplitValidation] == 0 {
		t.Fatalf("counts: got %d examples, splits %v", res.Examples, res.Splits)
	}
	for _, view := range cfg.Views {
		t.Run(view, func(t *testing.T) {
			compareExamples(t, "arrow-file", readExamples(t, "arrow-file", filepath.Join(dir, "dataset"+viewSuffix(view)+".arrow")), expected(t, n, cfg, view, ""))
			for _, split := range []string{SplitTrain, SplitValidation} {
				want := expected(t, n, cfg, view, split)
				arrowFiles := filesOf(res, "arrow", view, split)
				pqFiles := filesOf(res, "parquet", view, split)
				if len(arrowFiles) != 1 || len(pqFiles) != 1 {
					t.Fatalf("%s: got %d arrow and %d parquet files, want 1 each", split, len(arrowFiles), len(pqFiles))
				}
				compareExamples(t, "arrow "+split, readExamples(t, "arrow", filepath.Join(dir, arrowFiles[0].Path)), want)
				compareExamples(t, "parquet "+split, readExamples(t, "parquet", filepath.Join(dir, pqFiles[0].Path)), want)
				for _, format := range []string{"openai-chat", "axolotl-chat", "completion", "alpaca", "sharegpt", "agentgym"} {
					fs := filesOf(res, format, view, split)
					if len(fs) != 1 {
						t.Fatalf("%s %s: got %d files, want 1", format, split, len(fs))
					}
					if want := format + viewSuffix(view) + "." + split + ".jsonl"; fs[0].Path != want {
						t.Errorf("file name: got %s, want %s", fs[0].Path, want)
					}
					rows := readJSONLRows(t, filepath.Join(dir, fs[0].Path))
					if fs[0].Rows != len(rows) {
						t.Fatalf("%s %s: got %d rows, listed %d", format, split, len(rows), fs[0].Rows)
					}
					checkJSONLRows(t, format, rows, want, cfg)
				}
			}
		})
	}
	t.Run("hf-layout", func(t *testing.T) {
		var dd struct{ Splits []string }
		filetest.ReadJSON(t, filepath.Join(dir, "arrow", "dataset_dict.json"), &dd)
		if !slices.Equal(dd.Splits, []string{SplitTrain, SplitValidation}) {
			t.Errorf("dataset_dict.json splits: got %v", dd.Splits)
		}
		var state struct {
			DataFiles []struct{ Filename string } `json:"_data_files"`
			Split     string                      `json:"_split"`
			FP        string                      `json:"_fingerprint"`
		}
		filetest.ReadJSON(t, filepath.Join(dir, "arrow", "train", "state.json"), &state)
		if len(state.DataFiles) != 1 || state.DataFiles[0].Filename != "data-00000-of-00001.arrow" || state.Split != "train" || state.FP == "" {
			t.Errorf("state.json: got %+v", state)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "arrow", "train", "dataset_info.json"))
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Features map[string]json.RawMessage `json:"features"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		if got, want := string(info.Features["id"]), `{"dtype": "string", "_type": "Value"}`; compactJSON(got) != compactJSON(want) {
			t.Errorf("feature id: got %s, want %s", got, want)
		}
		wantSteps := `[{"thought": {"dtype": "string", "_type": "Value"}, "action": {"dtype": "string", "_type": "Value"}, "action_type": {"dtype": "string", "_type": "Value"}, "argument": {"dtype": "string", "_type": "Value"}, "observation": {"dtype": "string", "_type": "Value"}, "reasoning": {"dtype": "string", "_type": "Value"}, "logprobs": [{"dtype": "float64", "_type": "Value"}], "prompt_token_ids": [{"dtype": "int64", "_type": "Value"}], "completion_token_ids": [{"dtype": "int64", "_type": "Value"}]}]`
		if got := string(info.Features["steps"]); compactJSON(got) != compactJSON(wantSteps) {
			t.Errorf("feature steps: got %s, want %s", got, wantSteps)
		}
		if len(info.Features) != len(columns) {
			t.Errorf("features: got %d, want %d", len(info.Features), len(columns))
		}
	})
}

func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// checkJSONLRows compares the parsed rows of a file with the examples they came from:
// one row per example, but in completion and alpaca with observations untrained, where
// every step of the react and act views is a row of its own (see checkStepRows).
func checkJSONLRows(t *testing.T, format string, rows []map[string]any, want []Example, cfg pipeline.ExportConfig) {
	t.Helper()
	if (format == "completion" || format == "alpaca") && !cfg.TrainObservations {
		for i := range want {
			k := 1
			if want[i].View == ViewReAct || want[i].View == ViewAct {
				k = len(want[i].Steps)
			}
			if len(rows) < k {
				t.Fatalf("%s: rows end before example %s", format, want[i].ID)
			}
			checkStepRows(t, format, rows[:k], &want[i], cfg)
			rows = rows[k:]
		}
		if len(rows) != 0 {
			t.Fatalf("%s: %d rows past the examples", format, len(rows))
		}
		return
	}
	if len(rows) != len(want) {
		t.Fatalf("%s: got %d rows, want %d", format, len(rows), len(want))
	}
	for i, row := range rows {
		checkJSONLRow(t, format, row, &want[i], cfg)
	}
}

// checkStepRows checks the rows of one example in completion or alpaca with observations
// untrained: each row's prompt and completion, joined, are the start of the whole
// trajectory; each completion is exactly the next step's thought and action, with no
// observation in it; the last row ends where the trajectory ends.
func checkStepRows(t *testing.T, format string, rows []map[string]any, ex *Example, cfg pipeline.ExportConfig) {
	t.Helper()
	full := completionPrompt(ex, cfg.System) + ex.Completion()
	for k, row := range rows {
		var prompt, completion string
		if format == "completion" {
			prompt, completion = row["prompt"].(string), row["completion"].(string)
		} else {
			if row["instruction"] != QuestionLine(ex.Task, ex.Question) || row["system"] != cfg.System && cfg.System != "" {
				t.Fatalf("alpaca %s row %d: %v", ex.ID, k, row)
			}
			prompt = completionPrompt(ex, cfg.System) + row["input"].(string)
			if row["input"] != "" {
				prompt += "\n"
			}
			completion = row["output"].(string)
		}
		if !strings.HasPrefix(full, prompt+completion) {
			t.Fatalf("%s %s row %d: prompt+completion is not the start of the trajectory:\n%q\n%q", format, ex.ID, k, prompt+completion, full)
		}
		if strings.Contains(completion, "Observation") {
			t.Fatalf("%s %s row %d: an observation in the trained text %q", format, ex.ID, k, completion)
		}
		if ex.View == ViewReAct || ex.View == ViewAct {
			st := ex.Steps[k]
			want := fmt.Sprintf("Action %d: %s", k+1, st.Action)
			if st.Thought != "" {
				want = fmt.Sprintf("Thought %d: %s\n", k+1, st.Thought) + want
			}
			if completion != want {
				t.Fatalf("%s %s row %d: completion %q, want %q", format, ex.ID, k, completion, want)
			}
		}
		if k == len(rows)-1 && prompt+completion != full {
			t.Fatalf("%s %s: the last row ends before the trajectory", format, ex.ID)
		}
	}
}

// checkJSONLRow compares one parsed row with the example it came from.
func checkJSONLRow(t *testing.T, format string, row map[string]any, ex *Example, cfg pipeline.ExportConfig) {
	t.Helper()
	switch format {
	case "openai-chat", "axolotl-chat":
		msgs := row["messages"].([]any)
		if len(msgs) != len(ex.Messages) {
			t.Fatalf("%s %s: got %d messages, want %d", format, ex.ID, len(msgs), len(ex.Messages))
		}
		for i, x := range msgs {
			m := x.(map[string]any)
			w := ex.Messages[i]
			if m["role"] != w.Role || m["content"] != w.Content {
				t.Fatalf("%s %s message %d: got %v, want %+v", format, ex.ID, i, m, w)
			}
			if format == "axolotl-chat" && m["train"] != w.Trainable {
				t.Fatalf("axolotl %s message %d train: got %v, want %v", ex.ID, i, m["train"], w.Trainable)
			}
			if format == "openai-chat" {
				_, has := m["weight"]
				if has != (w.Role == RoleAssistant && cfg.Weights) {
					t.Fatalf("openai %s message %d (%s): weight present %v", ex.ID, i, w.Role, has)
				}
			}
		}
	case "completion":
		if row["prompt"] != completionPrompt(ex, cfg.System) || row["completion"] != ex.Completion() {
			t.Fatalf("completion %s: got %v", ex.ID, row)
		}
	case "alpaca":
		if row["instruction"] != QuestionLine(ex.Task, ex.Question) || row["output"] != ex.Completion() || (cfg.System != "" && row["system"] != cfg.System) {
			t.Fatalf("alpaca %s: got %v", ex.ID, row)
		}
	case "sharegpt":
		conv := row["conversations"].([]any)
		if len(conv) != len(ex.Messages) {
			t.Fatalf("sharegpt %s: got %d turns, want %d", ex.ID, len(conv), len(ex.Messages))
		}
		for i, x := range conv {
			if got := x.(map[string]any)["value"]; got != ex.Messages[i].Content {
				t.Fatalf("sharegpt %s turn %d: got %v, want %q", ex.ID, i, got, ex.Messages[i].Content)
			}
		}
	case "agentgym":
		conv := row["conversations"].([]any)
		want := len(ex.Messages)
		if ex.Messages[0].Role == RoleSystem {
			want-- // folded into the first human turn
		}
		if len(conv) != want || row["item_id"] != ex.Task+"_"+ex.ID {
			t.Fatalf("agentgym %s: got %d turns and item_id %v", ex.ID, len(conv), row["item_id"])
		}
	}
}

func TestRunCompression(t *testing.T) {
	const n = 20
	for _, comp := range []string{"none", "gzip", "zstd"} {
		t.Run(comp, func(t *testing.T) {
			cfg := pipeline.ExportConfig{Formats: []string{"openai-chat", "completion", "agentgym"}, Compression: comp, ValidationFraction: 0.2, SplitSeed: 1}
			res, dir := runExport(t, cfg, episodetest.Stream(n, nil))
			checkFileSums(t, dir, res)
			ext, _ := jsonlExt(comp)
			total := 0
			for _, f := range res.Files {
				if f.Format == "card" || f.Format == "handoff" || f.Format == "plot" {
					continue
				}
				if !strings.HasSuffix(f.Path, ext) {
					t.Errorf("%s: want extension %s", f.Path, ext)
				}
				rows := readJSONLRows(t, filepath.Join(dir, f.Path))
				if len(rows) != f.Rows {
					t.Errorf("%s: read %d rows, listed %d", f.Path, len(rows), f.Rows)
				}
				want := expected(t, n, cfg, ViewReAct, f.Split)
				checkJSONLRows(t, f.Format, rows, want, cfg)
				if f.Format != "completion" {
					total += len(rows)
				}
			}
			if total != 2*n {
				t.Errorf("rows over all openai-chat and agentgym files: got %d, want %d", total, 2*n)
			}
		})
	}
}

func TestRunSplitDisjointAndDeterministic(t *testing.T) {
	cfg := pipeline.ExportConfig{Formats: []string{"openai-chat", "parquet"}, ValidationFraction: 0.4, SplitSeed: 9}
	res1, dir1 := runExport(t, cfg, episodetest.Stream(80, nil))
	res2, _ := runExport(t, cfg, episodetest.Stream(80, nil))
	for i := range res1.Files {
		if res1.Files[i].Path != res2.Files[i].Path || (res1.Files[i].SHA256 != res2.Files[i].SHA256 && res1.Files[i].Format != "parquet") {
			t.Errorf("second run differs: %+v vs %+v", res1.Files[i], res2.Files[i])
		}
	}
	sides := map[string]string{}
	for _, split := range []string{SplitTrain, SplitValidation} {
		fs := filesOf(res1, "parquet", ViewReAct, split)
		for _, ex := range readExamples(t, "parquet", filepath.Join(dir1, fs[0].Path)) {
			if prev, ok := sides[ex.QuestionID]; ok && prev != split {
				t.Errorf("question %s is in both %s and %s", ex.QuestionID, prev, split)
			}
			sides[ex.QuestionID] = split
			if ex.Split != split {
				t.Errorf("%s: split column %s in the %s file", ex.ID, ex.Split, split)
			}
		}
	}
	if len(sides) != 40 {
		t.Errorf("questions: got %d, want 40", len(sides))
	}
}

func TestRunSharding(t *testing.T) {
	const n = 40
	lineLen := func(ex *Example) int64 { return int64(len(encodeLine(t, "openai-chat", ex, lineOptions{})) + 1) }
	tests := []struct {
		name     string
		rows     int
		bytes    int64
		format   string
		rowBytes func(*Example) int64
		with     string // another format exported alongside (arrow and parquet share batches)
	}{
		{"rows openai-chat", 7, 0, "openai-chat", nil, ""},
		{"rows arrow", 7, 0, "arrow", nil, ""},
		{"rows parquet", 16, 0, "parquet", nil, ""},
		{"bytes openai-chat", 0, 9000, "openai-chat", lineLen, ""},
		{"bytes arrow", 0, 12000, "arrow", rowSize, ""},
		{"bytes parquet", 0, 30000, "parquet", rowSize, ""},
		{"rows arrow with parquet", 7, 0, "arrow", nil, "parquet"},
		{"bytes arrow with parquet", 0, 12000, "arrow", rowSize, "parquet"},
		{"bytes parquet with arrow", 0, 30000, "parquet", rowSize, "arrow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := pipeline.ExportConfig{Formats: []string{tt.format}, ShardRows: tt.rows, ShardBytes: tt.bytes}
			if tt.with != "" {
				cfg.Formats = append(cfg.Formats, tt.with)
			}
			res, dir := runExport(t, cfg, episodetest.Stream(n, nil))
			want := expected(t, n, cfg, ViewReAct, SplitTrain)
			// The rule: a shard closes once it holds shard_rows rows or shard_bytes bytes.
			var wantRows []int
			cur, curBytes := 0, int64(0)
			for i := range want {
				cur++
				if tt.rowBytes != nil {
					curBytes += tt.rowBytes(&want[i])
				}
				if (tt.rows > 0 && cur >= tt.rows) || (tt.bytes > 0 && curBytes >= tt.bytes) {
					wantRows = append(wantRows, cur)
					cur, curBytes = 0, 0
				}
			}
			if cur > 0 {
				wantRows = append(wantRows, cur)
			}
			fs := filesOf(res, tt.format, ViewReAct, SplitTrain)
			if len(fs) != len(wantRows) || len(fs) < 2 {
				t.Fatalf("shards: got %d, want %d (at least 2)", len(fs), len(wantRows))
			}
			var got []Example
			for i, f := range fs {
				suffix := fmt.Sprintf("%05d-of-%05d", i, len(fs))
				if !strings.Contains(f.Path, suffix) {
					t.Errorf("shard %d: %s does not contain %s", i, f.Path, suffix)
				}
				if f.Rows != wantRows[i] {
					t.Errorf("shard %d rows: got %d, want %d", i, f.Rows, wantRows[i])
				}
				path := filepath.Join(dir, f.Path)
				switch tt.format {
				case "arrow", "parquet":
					got = append(got, readExamples(t, tt.format, path)...)
				default:
					if rows := readJSONLRows(t, path); len(rows) != f.Rows {
						t.Errorf("%s: read %d rows, listed %d", f.Path, len(rows), f.Rows)
					}
				}
			}
			if tt.format != "openai-chat" {
				compareExamples(t, "shards", got, want)
			}
			if tt.format == "arrow" {
				var state struct {
					DataFiles []struct{ Filename string } `json:"_data_files"`
				}
				filetest.ReadJSON(t, filepath.Join(dir, "arrow", "train", "state.json"), &state)
				if len(state.DataFiles) != len(fs) {
					t.Errorf("state.json data files: got %d, want %d", len(state.DataFiles), len(fs))
				}
			}
		})
	}
}

// TestRunSharedBatches: arrow and parquet exported together build each record batch once
// for both, and write the same bytes as each exported alone, across batch and shard ends.
func TestRunSharedBatches(t *testing.T) {
	n := 2300 // more than two batches of batchRows
	if testing.Short() {
		n = 300
	}
	for _, shardBytes := range []int64{0, 2 << 20} {
		t.Run(fmt.Sprintf("shard bytes %d", shardBytes), func(t *testing.T) {
			cfg := pipeline.ExportConfig{ShardBytes: shardBytes, ValidationFraction: 0.1, SplitSeed: 3, Views: []string{ViewReAct, ViewAct}}
			sums := func(formats ...string) map[string]string {
				c := cfg
				c.Formats = formats
				res, _ := runExport(t, c, benchStream(n))
				out := map[string]string{}
				for _, f := range res.Files {
					if f.Format == "arrow" || f.Format == "parquet" {
						out[f.Path] = f.SHA256
					}
				}
				return out
			}
			together := sums("parquet", "arrow-file", "arrow")
			alone := sums("arrow")
			for k, v := range sums("parquet") {
				alone[k] = v
			}
			if !reflect.DeepEqual(together, alone) {
				t.Errorf("files exported together:\n%v\nwant as exported alone:\n%v", together, alone)
			}
		})
	}
}

func TestRunValidationFailureWritesNothing(t *testing.T) {
	tests := []struct {
		name string
		cfg  pipeline.ExportConfig
		mod  func(i int, ep *pipeline.Episode)
	}{
		{"not correct", pipeline.ExportConfig{Formats: allFormats, CorrectOnly: true}, func(i int, ep *pipeline.Episode) {
			if i == 17 {
				ep.Correct = false
			}
		}},
		{"no finish", pipeline.ExportConfig{Formats: allFormats}, func(i int, ep *pipeline.Episode) {
			if i == 17 {
				ep.Steps = ep.Steps[:len(ep.Steps)-1]
			}
		}},
		{"empty question in act view", pipeline.ExportConfig{Formats: allFormats, Views: []string{ViewAct}}, func(i int, ep *pipeline.Episode) {
			if i == 17 {
				ep.Question = ""
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "export")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Run(t.Context(), RunOptions{Config: tt.cfg, Dir: dir, Kept: episodetest.Stream(30, tt.mod)})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Run: got %v, want a *ValidationError", err)
			}
			if want := episodetest.Synth(17).ID; ve.ID != want || !strings.Contains(err.Error(), want) {
				t.Errorf("error %q: want id %s", err, want)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 || entries[0].Name() != "keep.txt" {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("export dir after a failed run: got %v, want only keep.txt", names)
			}
		})
	}
}

// TestRunDropsOverLong: an episode over export.max_tokens is left out of every view and
// format and counted; the export goes on.
func TestRunDropsOverLong(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "export")
	long := map[int]bool{3: true, 17: true}
	cfg := pipeline.ExportConfig{Formats: allFormats, MaxTokens: 1200, Views: []string{ViewReAct, ViewStandard}}
	res, err := Run(t.Context(), RunOptions{Config: cfg, Dir: dir, Kept: episodetest.Stream(30, func(i int, ep *pipeline.Episode) {
		if long[i] {
			ep.Steps[0].Observation = strings.Repeat("long ", 2000)
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped["max_tokens"] != 2 || res.Examples != 28 {
		t.Errorf("dropped %v, examples %d: want 2 dropped for max_tokens, 28 examples", res.Dropped, res.Examples)
	}
	if res.Tokenizer != "o200k_base" {
		t.Errorf("tokenizer: got %q, want o200k_base", res.Tokenizer)
	}
	for _, f := range res.Files {
		if f.Format == "openai-chat" || f.Format == "parquet" {
			data, err := os.ReadFile(filepath.Join(dir, f.Path))
			if err != nil {
				t.Fatal(err)
			}
			for i := range long {
				if bytes.Contains(data, []byte(episodetest.Synth(i).ID)) || bytes.Contains(data, []byte("long long long")) {
					t.Errorf("%s holds the over-long episode %d", f.Path, i)
				}
			}
		}
	}
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(card, []byte("export.max_tokens 1200: 2 episodes over it were left out")) {
		t.Errorf("the card does not report the dropped episodes:\n%s", card)
	}
}

// TestRunValidationFailureLeavesNoDir: a failed export removes the export directory it
// had to create.
func TestRunValidationFailureLeavesNoDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "export")
	_, err := Run(t.Context(), RunOptions{Config: pipeline.ExportConfig{Formats: allFormats, CorrectOnly: true}, Dir: dir,
		Kept: episodetest.Stream(200, func(i int, ep *pipeline.Episode) {
			if i == 150 {
				ep.Correct = false
			}
		})})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Run: got %v, want a *ValidationError", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("export dir after a failed run: stat says %v, want it absent", err)
	}
}

func TestRunConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  pipeline.ExportConfig
		key  string
	}{
		{"unknown format", pipeline.ExportConfig{Formats: []string{"csv"}}, "export.formats"},
		{"unknown view", pipeline.ExportConfig{Formats: []string{"arrow"}, Views: []string{"tree"}}, "export.views"},
		{"unknown compression", pipeline.ExportConfig{Formats: []string{"alpaca"}, Compression: "xz"}, "export.compression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(t.Context(), RunOptions{Config: tt.cfg, Dir: t.TempDir(), Kept: episodetest.Stream(1, nil)})
			var ce *pipeline.ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key {
				t.Errorf("Run: got %v, want a config error on %s", err, tt.key)
			}
		})
	}
}

func TestCheckMasks(t *testing.T) {
	tests := []struct {
		name     string
		format   string
		line     string
		trainObs bool
		bad      bool
	}{
		{"openai ok", "openai-chat", `{"messages":[{"role":"user","content":"Question: q"},{"role":"assistant","content":"a","weight":1}]}`, false, false},
		{"openai weight on user", "openai-chat", `{"messages":[{"role":"user","content":"Question: q","weight":0},{"role":"assistant","content":"a"}]}`, false, true},
		{"axolotl observation trained", "axolotl-chat", `{"messages":[{"role":"user","content":"Question: q","train":false},{"role":"assistant","content":"a","train":true},{"role":"user","content":"Observation: o","train":true},{"role":"assistant","content":"b","train":true}]}`, false, true},
		{"axolotl observation trained allowed", "axolotl-chat", `{"messages":[{"role":"user","content":"Question: q","train":false},{"role":"assistant","content":"a","train":true},{"role":"user","content":"Observation: o","train":true},{"role":"assistant","content":"b","train":true}]}`, true, false},
		{"axolotl question trained", "axolotl-chat", `{"messages":[{"role":"user","content":"Question: q","train":true},{"role":"assistant","content":"a","train":true}]}`, true, true},
		{"axolotl system trained", "axolotl-chat", `{"messages":[{"role":"system","content":"s","train":true},{"role":"user","content":"Question: q","train":false},{"role":"assistant","content":"a","train":true}]}`, true, true},
		{"agentgym human loss", "agentgym", `{"conversations":[{"from":"human","loss":true,"value":"Question: q"},{"from":"gpt","loss":true,"value":"a"}],"item_id":"x"}`, false, true},
		{"agentgym ok", "agentgym", `{"conversations":[{"from":"human","loss":null,"value":"Question: q"},{"from":"gpt","loss":true,"value":"a"}],"item_id":"x"}`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.jsonl")
			if err := os.WriteFile(path, []byte(tt.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rows, err := checkMasks(path, tt.format, tt.trainObs)
			var me *MaskError
			if got := errors.As(err, &me); got != tt.bad {
				t.Errorf("checkMasks: got error %v, want a mask error %v", err, tt.bad)
			}
			if rows != 1 {
				t.Errorf("rows: got %d, want 1", rows)
			}
		})
	}
}

func TestRunTrainObservations(t *testing.T) {
	cfg := pipeline.ExportConfig{Formats: []string{"axolotl-chat", "agentgym"}, TrainObservations: true}
	res, dir := runExport(t, cfg, episodetest.Stream(5, nil))
	f := filesOf(res, "axolotl-chat", ViewReAct, SplitTrain)[0]
	rows := readJSONLRows(t, filepath.Join(dir, f.Path))
	obs := rows[0]["messages"].([]any)[2].(map[string]any)
	if obs["train"] != true || !strings.HasPrefix(obs["content"].(string), "Observation: ") {
		t.Errorf("observation turn with train_observations: got %v", obs)
	}
}

// hubCard is the YAML front matter of the dataset card under the names the Hugging Face
// Hub reads, declared here apart from the writer's cardMeta so a wrong tag there shows.
type hubCard struct {
	License        string   `yaml:"license"`
	TaskCategories []string `yaml:"task_categories"`
	Tags           []string `yaml:"tags"`
	Configs        []struct {
		Name      string `yaml:"config_name"`
		DataFiles []struct {
			Split string   `yaml:"split"`
			Path  []string `yaml:"path"`
		} `yaml:"data_files"`
	} `yaml:"configs"`
	DatasetInfo []struct {
		ConfigName string           `yaml:"config_name"`
		Features   []map[string]any `yaml:"features"`
		Splits     []struct {
			Name        string `yaml:"name"`
			NumBytes    int64  `yaml:"num_bytes"`
			NumExamples int    `yaml:"num_examples"`
		} `yaml:"splits"`
	} `yaml:"dataset_info"`
}

// readCard reads the dataset card at path: its front matter, which must open the file,
// and the Markdown after it.
func readCard(t *testing.T, path string) (hubCard, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(string(data), "---\n", 3)
	if len(parts) != 3 || parts[0] != "" {
		t.Fatalf("%s does not start with YAML front matter", filepath.Base(path))
	}
	var meta hubCard
	if err := yaml.Unmarshal([]byte(parts[1]), &meta); err != nil {
		t.Fatalf("card YAML: %v", err)
	}
	return meta, parts[2]
}

func TestRunCard(t *testing.T) {
	const n = 50
	cfg := pipeline.ExportConfig{Formats: []string{"parquet", "openai-chat"}, ValidationFraction: 0.25, SplitSeed: 2, Views: []string{ViewReAct, ViewAct}, ShardRows: 15}
	info := CardInfo{
		RunID: "run-7", Model: "model-x", PromptHash: "ph123", CorpusHash: "ch456", Task: "hotpotqa", Method: "react",
		Summary: pipeline.Summary{Episodes: 80, Kept: n, RejectReasons: map[string]int{"correct/wrong_answer": 30},
			Usage:   pipeline.Usage{PromptTokens: 1000, CompletionTokens: 200, TotalTokens: 1200, CostUSD: 0.5},
			Classes: map[string]pipeline.ClassCount{"bridge": {Generated: 50, Kept: 30}, "comparison": {Generated: 30, Kept: 20}}},
	}
	dir := filepath.Join(t.TempDir(), "export")
	res, err := Run(t.Context(), RunOptions{Config: cfg, Dir: dir, Kept: episodetest.Stream(n, nil), Card: info})
	if err != nil {
		t.Fatal(err)
	}
	meta, body := readCard(t, filepath.Join(dir, "README.md"))
	if meta.License == "" || len(meta.TaskCategories) == 0 || !slices.Contains(meta.Tags, "react") {
		t.Errorf("card metadata: got license %q, categories %v, tags %v", meta.License, meta.TaskCategories, meta.Tags)
	}
	// One config per view, then one per conversational JSONL format (openai-chat here).
	if len(meta.Configs) != 3 || meta.Configs[0].Name != "default" || meta.Configs[1].Name != "act" || meta.Configs[2].Name != "openai-chat" {
		t.Fatalf("configs: got %+v", meta.Configs)
	}
	for ci, view := range []string{ViewReAct, ViewAct} {
		for _, df := range meta.Configs[ci].DataFiles {
			var want []string
			for _, f := range filesOf(res, "parquet", view, df.Split) {
				want = append(want, f.Path)
				if _, err := os.Stat(filepath.Join(dir, f.Path)); err != nil {
					t.Error(err)
				}
			}
			if !slices.Equal(df.Path, want) {
				t.Errorf("config %s split %s: got %v, want %v", meta.Configs[ci].Name, df.Split, df.Path, want)
			}
		}
		di := meta.DatasetInfo[ci]
		if len(di.Features) != len(columns) || di.Features[0]["name"] != "id" {
			t.Errorf("dataset_info features: got %v", di.Features)
		}
		if len(di.Splits) != 2 {
			t.Fatalf("dataset_info splits: got %+v", di.Splits)
		}
		for _, sp := range di.Splits {
			if sp.NumExamples != res.Splits[sp.Name] || sp.NumBytes <= 0 {
				t.Errorf("split %s: card says %d examples, %d bytes; wrote %d", sp.Name, sp.NumExamples, sp.NumBytes, res.Splits[sp.Name])
			}
		}
	}
	for _, want := range []string{"model-x", "ph123", "ch456", "correct/wrong_answer", "| bridge | 50 | 30 | 60.0% |", "0.010000", "62.5%"} {
		if !strings.Contains(body, want) {
			t.Errorf("card body lacks %q", want)
		}
	}
}

func TestRunPairs(t *testing.T) {
	const n = 12
	rejected := func() iter.Seq2[pipeline.Rejected, error] {
		return func(yield func(pipeline.Rejected, error) bool) {
			for i := range n {
				if i%4 != 0 {
					continue
				}
				if !yield(wrongAnswer(i), nil) {
					return
				}
				loop := episodetest.Synth(i)
				loop.Finished, loop.StopReason, loop.Correct = false, pipeline.StopLoop, false
				if !yield(pipeline.Rejected{Episode: loop}, nil) {
					return
				}
			}
		}
	}
	cfg := pipeline.ExportConfig{Formats: []string{"openai-chat"}, Pairs: true, System: "Sys."}
	dir := filepath.Join(t.TempDir(), "export")
	res, err := Run(t.Context(), RunOptions{Config: cfg, Dir: dir, Kept: episodetest.Stream(n, nil), Rejected: rejected})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pairs != 3 {
		t.Fatalf("pairs: got %d, want 3", res.Pairs)
	}
	rows := readJSONLRows(t, filepath.Join(dir, "pairs.jsonl"))
	if len(rows) != 3 {
		t.Fatalf("pairs.jsonl rows: got %d, want 3", len(rows))
	}
	for _, row := range rows {
		if got := keys(row); !slices.Equal(got, []string{"chosen", "prompt", "rejected"}) {
			t.Errorf("pair keys: got %v", got)
		}
		chosen, rejected := row["chosen"].(string), row["rejected"].(string)
		if !strings.HasPrefix(row["prompt"].(string), "Sys.\n\nQuestion: ") && !strings.HasPrefix(row["prompt"].(string), "Sys.\n\nClaim: ") {
			t.Errorf("prompt: got %q", row["prompt"])
		}
		if !strings.Contains(rejected, "Finish[wrong guess]") || strings.Contains(chosen, "wrong guess") {
			t.Errorf("pair: chosen %q, rejected %q", chosen, rejected)
		}
	}
}

// readRows reads back one written file of any format and returns its row count.
func readRows(t *testing.T, path, format string) int {
	t.Helper()
	switch format {
	case "arrow", "arrow-file", "parquet":
		return len(readExamples(t, format, path))
	}
	return len(readJSONLRows(t, path))
}

// TestExporterConformance runs every exporter through the Exporter interface directly:
// what it lists after Close exists, adds up to what was written, reads back, and a
// cancelled context stops Write.
func TestExporterConformance(t *testing.T) {
	for _, format := range allFormats {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			cfg := pipeline.ExportConfig{ShardRows: 8, Compression: "gzip"}
			exp, err := newExporter(dir, format, ViewReAct, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := expected(t, 21, cfg, ViewReAct, "")
			for i := range want {
				if i%3 == 0 {
					want[i].Split = SplitValidation
				}
				if err := exp.Write(t.Context(), want[i]); err != nil {
					t.Fatalf("Write %d: %v", i, err)
				}
			}
			if err := exp.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			rows := 0
			for _, f := range exp.Files() {
				if f.Format != format {
					continue
				}
				n := readRows(t, filepath.Join(dir, f.Path), format)
				if n != f.Rows {
					t.Errorf("%s: read %d rows, listed %d", f.Path, n, f.Rows)
				}
				rows += n
			}
			wantRows := len(want)
			if format == "completion" || format == "alpaca" { // a row per step
				wantRows = 0
				for i := range want {
					wantRows += len(want[i].Steps)
				}
			}
			if rows != wantRows {
				t.Errorf("rows over all files: got %d, want %d", rows, wantRows)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("temporary shard left behind: %s", e.Name())
				}
			}

			exp2, err := newExporter(t.TempDir(), format, ViewReAct, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if err := exp2.Write(ctx, want[0]); !errors.Is(err, context.Canceled) {
				t.Errorf("Write with a cancelled context: got %v, want context.Canceled", err)
			}
			exp2.Close()
		})
	}
}
