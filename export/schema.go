package export

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// column describes one Arrow column of an Example: the single place the Arrow, Parquet
// and Hugging Face schemas come from.
type column struct {
	name     string
	typ      arrow.DataType
	put      func(c *colBuf, ex *Example)
	read     func(a arrow.Array, i int, ex *Example)
	size     func(ex *Example) int // approximate bytes of the value, for shard_bytes
	nullable bool                  // the column holds nulls (reward)
}

var (
	stepFields = []arrow.Field{
		{Name: "thought", Type: arrow.BinaryTypes.String},
		{Name: "action", Type: arrow.BinaryTypes.String},
		{Name: "action_type", Type: arrow.BinaryTypes.String},
		{Name: "argument", Type: arrow.BinaryTypes.String},
		{Name: "observation", Type: arrow.BinaryTypes.String},
		// The step's reasoning text ("" when none), and the log-probabilities and token
		// ids of the call that decided it (empty lists without llm.logprobs and
		// llm.token_ids), for RL hand-off.
		{Name: "reasoning", Type: arrow.BinaryTypes.String},
		{Name: "logprobs", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)},
		{Name: "prompt_token_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "completion_token_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	}
	messageFields = []arrow.Field{
		{Name: "role", Type: arrow.BinaryTypes.String},
		{Name: "content", Type: arrow.BinaryTypes.String},
		{Name: "trainable", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "reasoning", Type: arrow.BinaryTypes.String}, // export.reasoning keep; "" when none
	}
	stepsType    = arrow.ListOf(arrow.StructOf(stepFields...))
	messagesType = arrow.ListOf(arrow.StructOf(messageFields...))
)

func strCol(name string, get func(*Example) string, set func(*Example, string)) column {
	return column{
		name: name, typ: arrow.BinaryTypes.String,
		put:  func(c *colBuf, ex *Example) { c.str(get(ex)) },
		read: func(a arrow.Array, i int, ex *Example) { set(ex, a.(*array.String).Value(i)) },
		size: func(ex *Example) int { return len(get(ex)) + 4 },
	}
}

func boolCol(name string, get func(*Example) bool, set func(*Example, bool)) column {
	return column{
		name: name, typ: arrow.FixedWidthTypes.Boolean,
		put:  func(c *colBuf, ex *Example) { c.boolean(get(ex)) },
		read: func(a arrow.Array, i int, ex *Example) { set(ex, a.(*array.Boolean).Value(i)) },
		size: func(*Example) int { return 1 },
	}
}

func floatCol(name string, get func(*Example) float64, set func(*Example, float64)) column {
	return column{
		name: name, typ: arrow.PrimitiveTypes.Float64,
		put:  func(c *colBuf, ex *Example) { c.float(get(ex)) },
		read: func(a arrow.Array, i int, ex *Example) { set(ex, a.(*array.Float64).Value(i)) },
		size: func(*Example) int { return 8 },
	}
}

// columns is the Arrow layout of an Example, in column order.
var columns = []column{
	strCol("id", func(e *Example) string { return e.ID }, func(e *Example, v string) { e.ID = v }),
	strCol("task", func(e *Example) string { return e.Task }, func(e *Example, v string) { e.Task = v }),
	strCol("method", func(e *Example) string { return e.Method }, func(e *Example, v string) { e.Method = v }),
	strCol("policy", func(e *Example) string { return e.Policy }, func(e *Example, v string) { e.Policy = v }),
	strCol("question_id", func(e *Example) string { return e.QuestionID }, func(e *Example, v string) { e.QuestionID = v }),
	strCol("question", func(e *Example) string { return e.Question }, func(e *Example, v string) { e.Question = v }),
	strCol("answer", func(e *Example) string { return e.Answer }, func(e *Example, v string) { e.Answer = v }),
	strCol("prediction", func(e *Example) string { return e.Prediction }, func(e *Example, v string) { e.Prediction = v }),
	boolCol("correct", func(e *Example) bool { return e.Correct }, func(e *Example, v bool) { e.Correct = v }),
	floatCol("em", func(e *Example) float64 { return e.EM }, func(e *Example, v float64) { e.EM = v }),
	floatCol("f1", func(e *Example) float64 { return e.F1 }, func(e *Example, v float64) { e.F1 = v }),
	{
		// reward is null where the episode has none (the Wikipedia tasks).
		name: "reward", typ: arrow.PrimitiveTypes.Float64, nullable: true,
		put: func(c *colBuf, ex *Example) {
			if ex.Reward == nil {
				c.floatNull()
				return
			}
			c.float(*ex.Reward)
		},
		read: func(a arrow.Array, i int, ex *Example) {
			if a.IsValid(i) {
				v := a.(*array.Float64).Value(i)
				ex.Reward = &v
			}
		},
		size: func(*Example) int { return 8 },
	},
	{
		name: "n_steps", typ: arrow.PrimitiveTypes.Int64,
		put:  func(c *colBuf, ex *Example) { c.integer(ex.NSteps) },
		read: func(a arrow.Array, i int, ex *Example) { ex.NSteps = a.(*array.Int64).Value(i) },
		size: func(*Example) int { return 8 },
	},
	{name: "steps", typ: stepsType, put: putSteps, read: readSteps, size: stepsSize},
	{name: "messages", typ: messagesType, put: putMessages, read: readMessages, size: messagesSize},
	strCol("text", func(e *Example) string { return e.Text }, func(e *Example, v string) { e.Text = v }),
	{name: "tools", typ: toolsType, put: putTools, read: readTools, size: toolsSize},
	{name: "tool_messages", typ: toolMessagesType, put: putToolMessages, read: readToolMessages, size: toolMessagesSize},
	boolCol("rationalized", func(e *Example) bool { return e.Rationalized }, func(e *Example, v bool) { e.Rationalized = v }),
	{
		name: "n_tokens", typ: arrow.PrimitiveTypes.Int64,
		put:  func(c *colBuf, ex *Example) { c.integer(ex.Tokens) },
		read: func(a arrow.Array, i int, ex *Example) { ex.Tokens = a.(*array.Int64).Value(i) },
		size: func(*Example) int { return 8 },
	},
	strCol("run_id", func(e *Example) string { return e.RunID }, func(e *Example, v string) { e.RunID = v }),
	strCol("view", func(e *Example) string { return e.View }, func(e *Example, v string) { e.View = v }),
	strCol("split", func(e *Example) string { return e.Split }, func(e *Example, v string) { e.Split = v }),
}

func putSteps(c *colBuf, ex *Example) {
	st, f := c.structs()
	for _, s := range ex.Steps {
		st.n++
		f[0].str(s.Thought)
		f[1].str(s.Action)
		f[2].str(s.ActionType)
		f[3].str(s.Argument)
		f[4].str(s.Observation)
		f[5].str(s.Reasoning)
		f[6].floats(s.Logprobs)
		f[7].ints(s.PromptTokenIDs)
		f[8].ints(s.CompletionTokenIDs)
	}
	c.endList()
}

// floatsAt and intsAt read element k of a list column; nil for an empty list.
func floatsAt(l *array.List, k int) []float64 {
	s, e := l.ValueOffsets(k)
	if s == e {
		return nil
	}
	return append([]float64(nil), l.ListValues().(*array.Float64).Float64Values()[s:e]...)
}

func intsAt(l *array.List, k int) []int64 {
	s, e := l.ValueOffsets(k)
	if s == e {
		return nil
	}
	return append([]int64(nil), l.ListValues().(*array.Int64).Int64Values()[s:e]...)
}

func readSteps(a arrow.Array, i int, ex *Example) {
	l := a.(*array.List)
	st := l.ListValues().(*array.Struct)
	f := func(j int) *array.String { return st.Field(j).(*array.String) }
	start, end := l.ValueOffsets(i)
	ex.Steps = make([]Step, 0, end-start)
	for k := int(start); k < int(end); k++ {
		s := Step{
			Thought: f(0).Value(k), Action: f(1).Value(k), ActionType: f(2).Value(k),
			Argument: f(3).Value(k), Observation: f(4).Value(k),
		}
		if st.NumField() > 8 { // files written before the reasoning and token columns have none
			s.Reasoning = f(5).Value(k)
			s.Logprobs = floatsAt(st.Field(6).(*array.List), k)
			s.PromptTokenIDs = intsAt(st.Field(7).(*array.List), k)
			s.CompletionTokenIDs = intsAt(st.Field(8).(*array.List), k)
		}
		ex.Steps = append(ex.Steps, s)
	}
}

func stepsSize(ex *Example) int {
	n := 4
	for _, s := range ex.Steps {
		n += len(s.Thought) + len(s.Action) + len(s.ActionType) + len(s.Argument) + len(s.Observation) + len(s.Reasoning) + 36 +
			8*(len(s.Logprobs)+len(s.PromptTokenIDs)+len(s.CompletionTokenIDs))
	}
	return n
}

func putMessages(c *colBuf, ex *Example) {
	st, f := c.structs()
	for _, m := range ex.Messages {
		st.n++
		f[0].str(m.Role)
		f[1].str(m.Content)
		f[2].boolean(m.Trainable)
		f[3].str(m.Reasoning)
	}
	c.endList()
}

func readMessages(a arrow.Array, i int, ex *Example) {
	l := a.(*array.List)
	st := l.ListValues().(*array.Struct)
	roles, contents := st.Field(0).(*array.String), st.Field(1).(*array.String)
	trainable := st.Field(2).(*array.Boolean)
	var reasoning *array.String
	if st.NumField() > 3 {
		reasoning = st.Field(3).(*array.String)
	}
	start, end := l.ValueOffsets(i)
	ex.Messages = make([]Message, 0, end-start)
	for k := int(start); k < int(end); k++ {
		m := Message{Role: roles.Value(k), Content: contents.Value(k), Trainable: trainable.Value(k)}
		if reasoning != nil {
			m.Reasoning = reasoning.Value(k)
		}
		ex.Messages = append(ex.Messages, m)
	}
}

func messagesSize(ex *Example) int {
	n := 4
	for _, m := range ex.Messages {
		n += len(m.Role) + len(m.Content) + len(m.Reasoning) + 13
	}
	return n
}

// rowSize approximates the uncompressed bytes of ex's row, for export.shard_bytes.
func rowSize(ex *Example) int64 {
	n := 0
	for _, c := range columns {
		n += c.size(ex)
	}
	return int64(n)
}

// Schema returns the Arrow schema of exported examples. Its metadata carries the Hugging
// Face features under the "huggingface" key, which datasets reads to restore them.
func Schema() *arrow.Schema {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: c.nullable}
	}
	info, err := json.Marshal(map[string]any{"info": map[string]any{"features": hfFeatures()}})
	if err != nil {
		panic(err) // the features are built from constants
	}
	md := arrow.NewMetadata([]string{"huggingface"}, []string{string(info)})
	return arrow.NewSchema(fields, &md)
}

// orderedObject is a JSON object whose keys keep their order (Hugging Face features are
// ordered: the order is the column order).
type orderedObject []keyValue

type keyValue struct {
	Key   string
	Value any
}

// MarshalJSON writes the object with its keys in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			buf.WriteString(", ")
		}
		k, err := json.Marshal(kv.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("feature %s: %w", kv.Key, err)
		}
		buf.Write(k)
		buf.WriteString(": ")
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// hfFeatures returns the Hugging Face datasets features of the schema in the JSON shape
// that dataset_info.json holds: {"id": {"dtype": "string", "_type": "Value"}, ...}, with a
// list of structs written as a one-element JSON list, as datasets 2.x and 3.x write a
// feature inferred from an Arrow list<struct>.
func hfFeatures() orderedObject {
	out := make(orderedObject, len(columns))
	for i, c := range columns {
		out[i] = keyValue{c.name, hfFeature(c.typ)}
	}
	return out
}

func hfFeature(dt arrow.DataType) any {
	switch t := dt.(type) {
	case *arrow.ListType:
		return []any{hfFeature(t.Elem())}
	case *arrow.StructType:
		obj := make(orderedObject, 0, t.NumFields())
		for _, f := range t.Fields() {
			obj = append(obj, keyValue{f.Name, hfFeature(f.Type)})
		}
		return obj
	}
	return orderedObject{{"dtype", hfDtype(dt)}, {"_type", "Value"}}
}

func hfDtype(dt arrow.DataType) string {
	switch dt.ID() {
	case arrow.STRING:
		return "string"
	case arrow.BOOL:
		return "bool"
	case arrow.FLOAT64:
		return "float64"
	case arrow.INT64:
		return "int64"
	}
	panic("export: no Hugging Face dtype for " + dt.String())
}

// yamlFeature is one feature in the dataset card's YAML shape: {name, dtype}, with a list
// of structs as {name, list: [features]} and a struct as {name, struct: [features]}.
type yamlFeature struct {
	Name   string        `yaml:"name"`
	Dtype  string        `yaml:"dtype,omitempty"`
	List   []yamlFeature `yaml:"list,omitempty"`
	Struct []yamlFeature `yaml:"struct,omitempty"`
	// Sequence is the dtype of a list of values (logprobs, token ids).
	Sequence string `yaml:"sequence,omitempty"`
}

// hfYAMLFeatures returns the features as the card's dataset_info lists them.
func hfYAMLFeatures() []yamlFeature {
	out := make([]yamlFeature, len(columns))
	for i, c := range columns {
		out[i] = toYAMLFeature(c.name, c.typ)
	}
	return out
}

func toYAMLFeature(name string, dt arrow.DataType) yamlFeature {
	if lt, ok := dt.(*arrow.ListType); ok {
		if st, ok := lt.Elem().(*arrow.StructType); ok {
			f := yamlFeature{Name: name}
			for _, sf := range st.Fields() {
				f.List = append(f.List, toYAMLFeature(sf.Name, sf.Type))
			}
			return f
		}
		return yamlFeature{Name: name, Sequence: hfDtype(lt.Elem())}
	}
	if st, ok := dt.(*arrow.StructType); ok {
		f := yamlFeature{Name: name}
		for _, sf := range st.Fields() {
			f.Struct = append(f.Struct, toYAMLFeature(sf.Name, sf.Type))
		}
		return f
	}
	return yamlFeature{Name: name, Dtype: hfDtype(dt)}
}

// DecodeRecord reads the examples of one record batch written by the Arrow or Parquet
// exporters (columns are found by name, so extra columns are ignored).
func DecodeRecord(rec arrow.Record) ([]Example, error) {
	out := make([]Example, rec.NumRows())
	sc := rec.Schema()
	for _, c := range columns {
		idx := sc.FieldIndices(c.name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("decode record: no column %s", c.name)
		}
		col := rec.Column(idx[0])
		if col.DataType().ID() != c.typ.ID() {
			return nil, fmt.Errorf("decode record: column %s is %s, want %s", c.name, col.DataType(), c.typ)
		}
		for i := range out {
			c.read(col, i, &out[i])
		}
	}
	return out, nil
}
