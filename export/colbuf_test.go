package export

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// builderAppend is how the columns were appended through arrow's builders before
// colBuf, by column: the reference colBuf's batches are held to.
var builderAppend = map[string]func(b array.Builder, ex *Example){
	"correct":      func(b array.Builder, ex *Example) { b.(*array.BooleanBuilder).Append(ex.Correct) },
	"rationalized": func(b array.Builder, ex *Example) { b.(*array.BooleanBuilder).Append(ex.Rationalized) },
	"em":           func(b array.Builder, ex *Example) { b.(*array.Float64Builder).Append(ex.EM) },
	"f1":           func(b array.Builder, ex *Example) { b.(*array.Float64Builder).Append(ex.F1) },
	"reward": func(b array.Builder, ex *Example) {
		if ex.Reward == nil {
			b.AppendNull()
			return
		}
		b.(*array.Float64Builder).Append(*ex.Reward)
	},
	"n_steps":       func(b array.Builder, ex *Example) { b.(*array.Int64Builder).Append(ex.NSteps) },
	"n_tokens":      func(b array.Builder, ex *Example) { b.(*array.Int64Builder).Append(ex.Tokens) },
	"steps":         builderSteps,
	"messages":      builderMessages,
	"tools":         builderTools,
	"tool_messages": builderToolMessages,
}

func builderString(get func(*Example) string) func(array.Builder, *Example) {
	return func(b array.Builder, ex *Example) { b.(*array.StringBuilder).Append(get(ex)) }
}

func init() {
	for name, get := range map[string]func(*Example) string{
		"id": func(e *Example) string { return e.ID }, "task": func(e *Example) string { return e.Task },
		"method": func(e *Example) string { return e.Method }, "policy": func(e *Example) string { return e.Policy },
		"question_id": func(e *Example) string { return e.QuestionID }, "question": func(e *Example) string { return e.Question },
		"answer": func(e *Example) string { return e.Answer }, "prediction": func(e *Example) string { return e.Prediction },
		"text": func(e *Example) string { return e.Text }, "run_id": func(e *Example) string { return e.RunID },
		"view": func(e *Example) string { return e.View }, "split": func(e *Example) string { return e.Split },
	} {
		builderAppend[name] = builderString(get)
	}
}

// refBatches builds record batches through arrow's builders, as batchBuilder did before
// colBuf: each batch's string buffers reserved at the last one's sizes, plus an eighth.
type refBatches struct {
	b     *array.RecordBuilder
	strs  []*array.StringBuilder
	sizes [][2]int
}

func newRefBatches(schema *arrow.Schema) *refBatches {
	r := &refBatches{b: array.NewRecordBuilder(memory.NewGoAllocator(), schema)}
	var walk func(b array.Builder)
	walk = func(b array.Builder) {
		switch b := b.(type) {
		case *array.StringBuilder:
			r.strs = append(r.strs, b)
		case *array.ListBuilder:
			walk(b.ValueBuilder())
		case *array.StructBuilder:
			for i := range b.NumField() {
				walk(b.FieldBuilder(i))
			}
		}
	}
	for _, f := range r.b.Fields() {
		walk(f)
	}
	r.sizes = make([][2]int, len(r.strs))
	return r
}

func (r *refBatches) record(exs []Example) arrow.Record {
	for i := range exs {
		for j, c := range columns {
			builderAppend[c.name](r.b.Field(j), &exs[i])
		}
	}
	for i, b := range r.strs {
		r.sizes[i] = [2]int{b.Len(), b.DataLen()}
	}
	rec := r.b.NewRecord()
	for i, b := range r.strs {
		b.Reserve(r.sizes[i][0] + r.sizes[i][0]/8)
		b.ReserveData(r.sizes[i][1] + r.sizes[i][1]/8)
	}
	return rec
}

func builderSteps(b array.Builder, ex *Example) {
	lb := b.(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	lb.Append(true)
	for _, s := range ex.Steps {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(s.Thought)
		sb.FieldBuilder(1).(*array.StringBuilder).Append(s.Action)
		sb.FieldBuilder(2).(*array.StringBuilder).Append(s.ActionType)
		sb.FieldBuilder(3).(*array.StringBuilder).Append(s.Argument)
		sb.FieldBuilder(4).(*array.StringBuilder).Append(s.Observation)
		sb.FieldBuilder(5).(*array.StringBuilder).Append(s.Reasoning)
		builderFloats(sb.FieldBuilder(6).(*array.ListBuilder), s.Logprobs)
		builderInts(sb.FieldBuilder(7).(*array.ListBuilder), s.PromptTokenIDs)
		builderInts(sb.FieldBuilder(8).(*array.ListBuilder), s.CompletionTokenIDs)
	}
}
func builderFloats(lb *array.ListBuilder, v []float64) {
	lb.Append(true)
	lb.ValueBuilder().(*array.Float64Builder).AppendValues(v, nil)
}
func builderInts(lb *array.ListBuilder, v []int64) {
	lb.Append(true)
	lb.ValueBuilder().(*array.Int64Builder).AppendValues(v, nil)
}
func builderMessages(b array.Builder, ex *Example) {
	lb := b.(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	lb.Append(true)
	for _, m := range ex.Messages {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(m.Role)
		sb.FieldBuilder(1).(*array.StringBuilder).Append(m.Content)
		sb.FieldBuilder(2).(*array.BooleanBuilder).Append(m.Trainable)
		sb.FieldBuilder(3).(*array.StringBuilder).Append(m.Reasoning)
	}
}

func builderTools(b array.Builder, ex *Example) {
	lb := b.(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	fb := sb.FieldBuilder(1).(*array.StructBuilder)
	lb.Append(true)
	ts := toolsOf(ex.Task, ex.View)
	for i, d := range ex.Tools {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(d.Type)
		fb.Append(true)
		fb.FieldBuilder(0).(*array.StringBuilder).Append(d.Function.Name)
		fb.FieldBuilder(1).(*array.StringBuilder).Append(d.Function.Description)
		fb.FieldBuilder(2).(*array.StringBuilder).Append(ts.parametersOf(i, d))
	}
}
func builderToolMessages(b array.Builder, ex *Example) {
	lb := b.(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	cb := sb.FieldBuilder(2).(*array.ListBuilder)
	csb := cb.ValueBuilder().(*array.StructBuilder)
	cfb := csb.FieldBuilder(2).(*array.StructBuilder)
	lb.Append(true)
	for _, m := range ex.ToolMessages {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(m.Role)
		sb.FieldBuilder(1).(*array.StringBuilder).Append(m.Content)
		cb.Append(true)
		for _, c := range m.ToolCalls {
			csb.Append(true)
			csb.FieldBuilder(0).(*array.StringBuilder).Append(c.ID)
			csb.FieldBuilder(1).(*array.StringBuilder).Append("function")
			cfb.Append(true)
			cfb.FieldBuilder(0).(*array.StringBuilder).Append(c.Name)
			cfb.FieldBuilder(1).(*array.StringBuilder).Append(c.Arguments)
		}
		sb.FieldBuilder(3).(*array.StringBuilder).Append(m.ToolCallID)
		sb.FieldBuilder(4).(*array.StringBuilder).Append(m.Name)
		sb.FieldBuilder(5).(*array.BooleanBuilder).Append(m.Trainable)
		sb.FieldBuilder(6).(*array.StringBuilder).Append(m.Reasoning)
	}
}

// colBufExamples are rows of every kind the columns hold: the three views of the
// fixture's episodes, reasoning texts with characters JSON escapes and non-ASCII ones,
// log-probabilities and token ids, rewards and missing rewards, and rows with nothing
// in their lists and empty strings.
func colBufExamples(t *testing.T) []Example {
	t.Helper()
	var out []Example
	for i := range 40 {
		ep := episodetest.Synth(i)
		ep.Steps = slices.Clone(ep.Steps)
		for j := range ep.Steps {
			if (i+j)%3 != 2 {
				ep.Steps[j].Reasoning = fmt.Sprintf("Step %d of %d: \"why\" <&>\n日本", j, i)
			}
		}
		if i%4 == 0 {
			ep.Steps[0].Calls = []pipeline.Call{{Completion: "c", Logprobs: []float64{-0.25, -1.5e-7, float64(i)}, PromptTokenIDs: []int64{1, 2, int64(i)}, CompletionTokenIDs: []int64{40}}}
		}
		view := []string{ViewReAct, ViewAct}[i%2]
		mode := []string{ReasoningKeep, ReasoningInline, ReasoningDrop}[i%3]
		ex, err := Render(ep, view, RenderOptions{System: "Answer the question.", Reasoning: mode})
		if err != nil {
			t.Fatal(err)
		}
		ex.Split = []string{SplitTrain, "validation"}[i%2]
		if i%5 == 1 {
			r := float64(i) / 7
			ex.Reward = &r
		}
		if i%7 == 3 {
			ex.Steps, ex.Messages, ex.Tools, ex.ToolMessages = nil, nil, nil, nil
			ex.Text, ex.Answer, ex.Prediction = "", "", ""
		}
		if i%11 == 5 {
			ex.Tools = append(slices.Clone(ex.Tools), tool.Def{Type: "function", Function: tool.Function{Name: "other", Description: "d",
				Parameters: tool.Schema{Type: "object", Required: []string{"x"}}}})
		}
		out = append(out, ex)
	}
	return out
}

// writeBoth writes rec as an Arrow IPC stream and as a Parquet file (the exporters'
// properties) and returns both files' bytes.
func writeBoth(t *testing.T, rec arrow.Record) (ipcBytes, pqBytes []byte) {
	t.Helper()
	var ib, pb bytes.Buffer
	iw := ipc.NewWriter(&ib, ipc.WithSchema(rec.Schema()))
	if err := iw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := iw.Close(); err != nil {
		t.Fatal(err)
	}
	installPooledZstd()
	pw, err := pqarrow.NewFileWriter(rec.Schema(), &pb, parquet.NewWriterProperties(parquetProps()...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return ib.Bytes(), pb.Bytes()
}

// TestColBufWritesBuilderBytes: record batches built by batchBuilder are written as the
// same Arrow IPC and Parquet bytes as batches of the same rows built through arrow's
// builders, batch after batch of one builder, whatever the rows hold.
func TestColBufWritesBuilderBytes(t *testing.T) {
	exs := colBufExamples(t)
	schema := Schema()
	bb := newBatchBuilder(schema)
	ref := newRefBatches(schema)
	defer ref.b.Release()
	// Batches of varied sizes, one empty, and a row without lists or text first (a column
	// of empty strings in a first batch) and again after rows with text.
	for _, batch := range [][2]int{{3, 4}, {0, 17}, {17, 17}, {17, 40}, {21, 22}, {3, 4}, {0, 40}} {
		rows := exs[batch[0]:batch[1]]
		for i := range rows {
			bb.add(&rows[i])
		}
		got := bb.record()
		want := ref.record(rows)
		if !array.RecordEqual(got, want) {
			t.Errorf("rows %v: the records differ", batch)
		}
		gi, gp := writeBoth(t, got)
		wi, wp := writeBoth(t, want)
		if !bytes.Equal(gi, wi) {
			t.Errorf("rows %v: Arrow IPC bytes differ (%d, want %d)", batch, len(gi), len(wi))
		}
		if !bytes.Equal(gp, wp) {
			t.Errorf("rows %v: Parquet bytes differ (%d, want %d)", batch, len(gp), len(wp))
		}
		got.Release()
		want.Release()
	}
}
