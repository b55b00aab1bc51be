package dataset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

const hotpotOfficial = `[
 {"_id": "5a1", "question": "Which lake did Orla Vint live beside?", "answer": "Marrow Lake", "type": "bridge", "level": "easy",
  "supporting_facts": [["Orla Vint", 2], ["Marrow Lake", 0]],
  "context": [["Orla Vint", ["Orla Vint is a poet.", " She lived by Marrow Lake."]], ["Marrow Lake", ["Marrow Lake is in Karsa."]]]},
 {"_id": "5a2", "question": "Is Kestrel Bay in Elsmere?", "answer": "yes", "type": "comparison", "level": "hard", "supporting_facts": [], "context": []}
]`

func TestLoadFormats(t *testing.T) {
	tests := []struct {
		name, file, content string
		opts                Options
		format              string
		want                []pipeline.Question
	}{
		{
			name: "hotpotqa official", file: "hotpot.json", content: hotpotOfficial, format: FormatHotpotQA,
			want: []pipeline.Question{
				{ID: "5a1", Task: "hotpotqa", Question: "Which lake did Orla Vint live beside?", Answer: "Marrow Lake", Type: "bridge", Level: "easy",
					SupportingFacts: []pipeline.Fact{{Title: "Orla Vint", Sentence: 2}, {Title: "Marrow Lake", Sentence: 0}},
					Context:         []pipeline.Paragraph{{Title: "Orla Vint", Sentences: []string{"Orla Vint is a poet.", " She lived by Marrow Lake."}}, {Title: "Marrow Lake", Sentences: []string{"Marrow Lake is in Karsa."}}}},
				{ID: "5a2", Task: "hotpotqa", Question: "Is Kestrel Bay in Elsmere?", Answer: "yes", Type: "comparison", Level: "hard"},
			},
		},
		{
			name: "hotpotqa simple", file: "simple.json", format: FormatHotpotQASimple,
			content: "\xef\xbb\xbf [{\"question\": \"Who wrote The Grey Tide?\", \"answer\": \"Orla Vint\", \"type\": \"bridge\"}, {\"question\": \"Q2?\", \"answer\": \"A2\"}]",
			want: []pipeline.Question{
				{ID: "hotpot-0", Task: "hotpotqa", Question: "Who wrote The Grey Tide?", Answer: "Orla Vint", Type: "bridge"},
				{ID: "hotpot-1", Task: "hotpotqa", Question: "Q2?", Answer: "A2"},
			},
		},
		{
			name: "hotpotqa simple with offset keeps file positions", file: "simple.json", format: FormatHotpotQASimple,
			content: `[{"question": "Q0?", "answer": "A0"}, {"question": "Q1?", "answer": "A1"}, {"question": "Q2?", "answer": "A2"}, {"question": "Q3?", "answer": "A3"}]`,
			opts:    Options{Offset: 1, Limit: 2},
			want: []pipeline.Question{
				{ID: "hotpot-1", Task: "hotpotqa", Question: "Q1?", Answer: "A1"},
				{ID: "hotpot-2", Task: "hotpotqa", Question: "Q2?", Answer: "A2"},
			},
		},
		{
			name: "fever", file: "fever.jsonl", format: FormatFEVER,
			content: `{"id": 17, "verifiable": "VERIFIABLE", "label": "SUPPORTS", "claim": "The Grey Tide is a novel.", "evidence": [[[1, 2, "The_Grey_Tide_-LRB-novel-RRB-", 0], [1, 3, "Orla_Vint", 1]], [[4, 5, "The_Grey_Tide_-LRB-novel-RRB-", 0]]]}

{"id": 18, "verifiable": "NOT VERIFIABLE", "label": "NOT ENOUGH INFO", "claim": "Orla Vint owns a boat.", "evidence": [[[9, null, null, null]]]}
{"id": 19, "verifiable": "VERIFIABLE", "label": "refutes", "claim": "Kestrel Bay is inland.", "evidence": [[[7, 8, "Kestrel_Bay", 0]]]}
`,
			want: []pipeline.Question{
				{ID: "17", Task: "fever", Question: "The Grey Tide is a novel.", Answer: "SUPPORTS", Type: "SUPPORTS",
					SupportingFacts: []pipeline.Fact{{Title: "The Grey Tide (novel)", Sentence: 0}, {Title: "Orla Vint", Sentence: 1}}},
				{ID: "18", Task: "fever", Question: "Orla Vint owns a boat.", Answer: "NOT ENOUGH INFO", Type: "NOT ENOUGH INFO"},
				{ID: "19", Task: "fever", Question: "Kestrel Bay is inland.", Answer: "REFUTES", Type: "REFUTES", SupportingFacts: []pipeline.Fact{{Title: "Kestrel Bay", Sentence: 0}}},
			},
		},
		{
			name: "generic jsonl", file: "q.jsonl", format: FormatJSONL,
			content: "{\"id\": \"a\", \"question\": \"Q?\", \"answer\": \"A\", \"type\": \"bridge\"}\r\n{\"id\": 7, \"question\": \"R?\", \"answer\": \"B\"}\n{\"question\": \"S?\", \"answer\": \"C\"}",
			want: []pipeline.Question{
				{ID: "a", Task: "hotpotqa", Question: "Q?", Answer: "A", Type: "bridge"},
				{ID: "7", Task: "hotpotqa", Question: "R?", Answer: "B"},
				{ID: "hotpotqa-2", Task: "hotpotqa", Question: "S?", Answer: "C"},
			},
		},
		{
			name: "generic jsonl for fever", file: "q.jsonl", format: FormatJSONL, opts: Options{Task: "fever"},
			content: `{"id": "c1", "question": "Orla Vint is a poet.", "answer": "supports"}`,
			want:    []pipeline.Question{{ID: "c1", Task: "fever", Question: "Orla Vint is a poet.", Answer: "SUPPORTS"}},
		},
		{
			name: "explicit format", file: "x.json", format: FormatHotpotQASimple, opts: Options{Format: FormatHotpotQASimple, Task: "hotpotqa"},
			content: `[{"question": "Q?", "answer": "A"}]`,
			want:    []pipeline.Question{{ID: "hotpot-0", Task: "hotpotqa", Question: "Q?", Answer: "A"}},
		},
		{
			// The text as the file has it, as the notebooks put it in the prompt; ids are keys.
			name: "edge white space kept", file: "e.jsonl", format: FormatJSONL,
			content: "{\"id\": \" e1 \", \"question\": \" Who wrote it? \", \"answer\": \"Orla Vint \"}\n",
			opts:    Options{Task: "hotpotqa"},
			want:    []pipeline.Question{{ID: "e1", Task: "hotpotqa", Question: " Who wrote it? ", Answer: "Orla Vint "}},
		},
		{
			name: "fever claim keeps edge white space", file: "f.jsonl", format: FormatFEVER,
			content: "{\"id\": 2, \"label\": \" SUPPORTS\", \"claim\": \"\\u001fA claim.\\t\"}",
			want:    []pipeline.Question{{ID: "2", Task: "fever", Question: "\u001fA claim.\t", Answer: "SUPPORTS", Type: "SUPPORTS"}},
		},
		{
			name: "hotpotqa official as jsonl", file: "h.jsonl", format: FormatHotpotQA,
			content: `{"_id": "z9", "question": "Q?", "answer": "A"}`,
			want:    []pipeline.Question{{ID: "z9", Task: "hotpotqa", Question: "Q?", Answer: "A"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rep, err := Load(filetest.Write(t, tt.file, tt.content), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("questions:\n got %+v\nwant %+v", got, tt.want)
			}
			if rep.Format != tt.format || rep.Kept != len(tt.want) || rep.Read != len(tt.want) || rep.Skipped != 0 {
				t.Errorf("report: got %+v, want format %s, read and kept %d", rep, tt.format, len(tt.want))
			}
		})
	}
}

func TestLoadBadInput(t *testing.T) {
	tests := []struct {
		name, file, content string
		opts                Options
		wantErr             string // a part of the error
	}{
		{"empty file", "e.jsonl", "", Options{}, "e.jsonl: empty file"},
		{"white space only", "e.jsonl", " \n\n\t", Options{}, "empty file"},
		{"empty array", "e.json", "[]", Options{}, "no records"},
		{"not json", "t.txt", "question,answer\n", Options{}, "want a JSON array or JSON lines"},
		{"missing answer", "hotpot.json", `[{"question": "Q0?", "answer": "A"}, {"question": "Q1?"}]`, Options{}, `hotpot.json record 1: missing "answer"`},
		{"empty question", "hotpot.json", `[{"question": "  ", "answer": "A"}]`, Options{}, `record 0: empty "question"`},
		{"wrong type", "hotpot.json", `[{"question": "Q?", "answer": 42}]`, Options{}, `record 0: "answer": want string, found JSON number`},
		{"wrong type, full record", "h.json", `[{"_id": "a", "question": 7, "answer": "A"}]`, Options{}, `record 0: "question": want string, found JSON number`},
		{"missing _id", "h.json", `[{"_id": "a", "question": "Q?", "answer": "A"}, {"question": "Q?", "answer": "A", "context": []}]`, Options{}, `record 1: missing "_id"`},
		{"bad supporting fact", "h.json", `[{"_id": "a", "question": "Q?", "answer": "A", "supporting_facts": [["T"]]}]`, Options{}, `"supporting_facts" 0: want [title, sentence index]`},
		{"bad context", "h.json", `[{"_id": "a", "question": "Q?", "answer": "A", "context": [["T", "not a list"]]}]`, Options{}, `"context" 0: want [title, [sentences]]`},
		{"malformed array", "h.json", `[{"question": "Q?", "answer": "A"}, {"question": "Q?" "answer": "A"}]`, Options{}, "h.json record 1: malformed JSON"},
		{"unterminated array", "h.json", `[{"question": "Q?", "answer": "A"}`, Options{}, "record 1: want ']'"},
		{"malformed line", "f.jsonl", "{\"id\": 1, \"label\": \"SUPPORTS\", \"claim\": \"C\"}\n{\"id\": 2,\n", Options{}, "f.jsonl line 2: malformed JSON"},
		{"invalid utf8", "f.jsonl", "{\"id\": 1, \"question\": \"Q\xff?\", \"answer\": \"A\"}\n", Options{}, "f.jsonl line 1: invalid UTF-8"},
		{"bad label", "f.jsonl", `{"id": 1, "label": "MAYBE", "claim": "C"}`, Options{}, `line 1: label "MAYBE": want SUPPORTS, REFUTES or NOT ENOUGH INFO`},
		{"long nei label", "f.jsonl", `{"id": 1, "label": "NOT ENOUGH INFORMATION", "claim": "C"}`, Options{}, `line 1: label "NOT ENOUGH INFORMATION": want SUPPORTS, REFUTES or NOT ENOUGH INFO`},
		{"missing claim id", "f.jsonl", `{"label": "SUPPORTS", "claim": "C"}`, Options{}, `line 1: missing "id"`},
		{"short evidence", "f.jsonl", `{"id": 1, "label": "SUPPORTS", "claim": "C", "evidence": [[[1, 2, "T"]]]}`, Options{}, `"evidence" 0.0: want [annotation, evidence, page, sentence]`},
		{"duplicate id", "q.jsonl", "{\"id\": \"a\", \"question\": \"Q?\", \"answer\": \"A\"}\n\n{\"id\": \"a\", \"question\": \"R?\", \"answer\": \"B\"}\n", Options{}, `q.jsonl line 3: duplicate id "a" (first at line 1)`},
		{"all bad with skip", "q.jsonl", `{"id": "a", "question": "Q?"}`, Options{SkipBad: true}, "no valid questions in 1 records (1 skipped)"},
		{"offset past end", "q.jsonl", `{"id": "a", "question": "Q?", "answer": "A"}`, Options{Offset: 5}, "offset 5 is past the last of 1 records"},
		{"task mismatch", "f.jsonl", `{"id": 1, "label": "SUPPORTS", "claim": "C"}`, Options{Task: "hotpotqa"}, `format fever holds fever questions, not task "hotpotqa"`},
		{"unknown format", "f.jsonl", `{"id": 1}`, Options{Format: "csv"}, `unknown format "csv"`},
		{"missing file", "", "", Options{}, "open question file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "absent.json")
			if tt.file != "" {
				path = filetest.Write(t, tt.file, tt.content)
			}
			_, _, err := Load(path, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadSkipBad(t *testing.T) {
	content := strings.Join([]string{
		`{"id": "a", "question": "Q?", "answer": "A"}`,
		`{"id": "b", "question": "R?"}`,
		`{"id": "a", "question": "S?", "answer": "C"}`,
		`{"id": "c", "question": "T?", "answer": "D"}`,
	}, "\n")
	got, rep, err := Load(filetest.Write(t, "q.jsonl", content), Options{SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, q := range got {
		ids = append(ids, q.ID)
	}
	if strings.Join(ids, ",") != "a,c" {
		t.Errorf("kept ids: got %v, want a,c", ids)
	}
	if rep.Read != 4 || rep.Kept != 2 || rep.Skipped != 2 || len(rep.Problems) != 2 {
		t.Errorf("report: got %+v, want read 4 kept 2 skipped 2 with 2 problems", rep)
	}
	if !strings.Contains(rep.Problems[1], `line 3: duplicate id "a" (first at line 1)`) {
		t.Errorf("problem 2: got %q, want the duplicate named with both lines", rep.Problems[1])
	}
}

func TestLoadLimitStopsEarly(t *testing.T) {
	// Everything after the first record is broken: with Limit 1 it must not be read.
	content := `[{"question": "Q?", "answer": "A"}, {"question": ` + strings.Repeat("x", 1000)
	got, rep, err := Load(filetest.Write(t, "h.json", content), Options{Limit: 1})
	if err != nil || len(got) != 1 || rep.Read != 1 {
		t.Errorf("got %d questions, report %+v, error %v; want 1 question and no error", len(got), rep, err)
	}
}

func TestLoadBoundsRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 5 MB records")
	}
	huge := strings.Repeat("word ", 1<<20)  // 5 MiB: over MaxRecordBytes
	long := strings.Repeat("word ", 20<<10) // 100 KiB: a record within bounds, a question over MaxTextBytes
	ok := `{"id": "b", "question": "Q?", "answer": "B"}`
	for _, tc := range []struct {
		name, content, where, what string
	}{
		{"a JSON line over the record bound", fmt.Sprintf("{\"id\": \"a\", \"question\": %q, \"answer\": \"A\"}\n%s\n", huge, ok), "line 1", "record over 4 MiB"},
		{"an unterminated JSON line", "{\"id\": \"a\", \"question\": \"" + huge + "\n" + ok + "\n", "line 1", "record over 4 MiB"},
		{"an array element over the record bound", fmt.Sprintf("[{\"question\": %q, \"answer\": \"A\"}, {\"question\": \"Q?\", \"answer\": \"B\"}]", huge), "record 0", "record over 4 MiB"},
		{"a question over the text bound", fmt.Sprintf("{\"id\": \"a\", \"question\": %q, \"answer\": \"A\"}\n%s\n", long, ok), "line 1", "over 64 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filetest.Write(t, "tasks.jsonl", tc.content)
			_, _, err := Load(path, Options{})
			if err == nil || !strings.Contains(err.Error(), path+" "+tc.where) || !strings.Contains(err.Error(), tc.what) {
				t.Fatalf("got %v, want an error naming %s %s: %s", err, path, tc.where, tc.what)
			}
			if len(err.Error()) > 1024 {
				t.Errorf("the error quotes the record: %d bytes", len(err.Error()))
			}
			if strings.HasPrefix(tc.content, "[") {
				return // an array cannot be read on past a bad element
			}
			got, rep, err := Load(path, Options{SkipBad: true})
			if err != nil || len(got) != 1 || got[0].ID != "b" || rep.Skipped != 1 {
				t.Errorf("with SkipBad: %d questions, %d skipped, %v; want b alone and one skipped", len(got), rep.Skipped, err)
			}
		})
	}
}

func TestPageTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Soul_Food_-LRB-film-RRB-", "Soul Food (film)"},
		{"Colin_Kaepernick", "Colin Kaepernick"},
		{"Star_Wars-COLON-_Episode_IV", "Star Wars: Episode IV"},
		{"A_-LSB-b-RSB-", "A [b]"},
	}
	for _, tt := range tests {
		if got := PageTitle(tt.in); got != tt.want {
			t.Errorf("PageTitle(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLoadRealFiles(t *testing.T) {
	tests := []struct {
		rel, format, task string
		n                 int
	}{
		{"hotpotqa/hotpot_dev_v1_simplified.json", FormatHotpotQASimple, pipeline.TaskHotpotQA, 7405},
		{"fever/paper_dev.jsonl", FormatFEVER, pipeline.TaskFEVER, 9999},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			path := shareddata.Path(t, tt.rel)
			got, rep, err := Load(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.n || rep.Format != tt.format || rep.Skipped != 0 {
				t.Errorf("got %d questions, report %+v; want %d in format %s", len(got), rep, tt.n, tt.format)
			}
			labels := map[string]int{}
			facts := 0
			for _, q := range got {
				if q.Task != tt.task || q.ID == "" || q.Question == "" || q.Answer == "" {
					t.Fatalf("incomplete question %+v", q)
				}
				labels[q.Type]++
				facts += len(q.SupportingFacts)
			}
			if tt.task == pipeline.TaskFEVER {
				if len(labels) != 3 || facts == 0 {
					t.Errorf("labels %v, %d supporting facts: want three labels and some facts", labels, facts)
				}
				for _, q := range got {
					if q.Answer == pipeline.LabelNEI && len(q.SupportingFacts) != 0 {
						t.Errorf("NOT ENOUGH INFO claim %s has facts %v", q.ID, q.SupportingFacts)
					}
				}
			}
			t.Logf("%d questions, types %v, %d facts", len(got), labels, facts)
			limited, rep, err := Load(path, Options{Offset: 100, Limit: 10})
			if err != nil || len(limited) != 10 || limited[0].ID != got[100].ID || rep.Read != 10 {
				t.Errorf("offset 100 limit 10: got %d questions, report %+v, error %v; want 10 from record 100", len(limited), rep, err)
			}
		})
	}
}

func TestSkipBadSkipsMalformedAndInvalidUTF8Lines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claims.jsonl")
	body := `{"id": 1, "label": "SUPPORTS", "claim": "A is B.", "evidence": []}` + "\n" +
		"{not json\n" +
		"{\"id\": 2, \"label\": \"REFUTES\", \"claim\": \"C \xff is D.\", \"evidence\": []}\n" +
		`{"id": 3, "label": "REFUTES", "claim": "E is F.", "evidence": []}` + "\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path, Options{Task: "fever"}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("without SkipBad: got %v, want an error naming line 2", err)
	}
	qs, rep, err := Load(path, Options{Task: "fever", SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || rep.Skipped != 2 || rep.Read != 4 {
		t.Errorf("got %d questions, report %+v; want 2 kept, 2 skipped of 4", len(qs), rep)
	}
	if len(rep.Problems) != 2 || !strings.Contains(rep.Problems[0], "line 2") || !strings.Contains(rep.Problems[1], "line 3: invalid UTF-8") {
		t.Errorf("problems: %q", rep.Problems)
	}
}

// TestReaderRecords reads record by record from an io.Reader: each record says where it
// sits, and the task follows the format.
func TestReaderRecords(t *testing.T) {
	in := strings.NewReader("{\"id\": 4, \"label\": \"SUPPORTS\", \"claim\": \"A is B.\"}\n\n{\"id\": 5, \"label\": \"Refutes.\", \"claim\": \"C is D.\"}\n")
	r, err := NewReader(in, "claims.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec)
	}
	want := []Record{
		{Question: pipeline.Question{ID: "4", Task: "fever", Question: "A is B.", Answer: "SUPPORTS", Type: "SUPPORTS"}, Index: 0, Where: "line 1"},
		{Question: pipeline.Question{ID: "5", Task: "fever", Question: "C is D.", Answer: "REFUTES", Type: "REFUTES"}, Index: 1, Where: "line 3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("records:\n got %+v\nwant %+v", got, want)
	}
	if r.Task() != pipeline.TaskFEVER || r.Report().Format != FormatFEVER || r.Report().Kept != 2 {
		t.Errorf("task %q, report %+v: want fever, format fever, 2 kept", r.Task(), r.Report())
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the end: got %v, want io.EOF", err)
	}
}

// TestAnswersOptional reads evaluation splits that hold no answers; an answer that is
// there is still checked.
func TestAnswersOptional(t *testing.T) {
	tests := []struct {
		name, file, content string
		want                []pipeline.Question
		wantErr             string
	}{
		{
			name: "hotpotqa without answers", file: "test.json",
			content: `[{"_id": "t1", "question": "Q1?", "context": [["T", ["s."]]]}, {"_id": "t2", "question": "Q2?", "answer": "A2"}]`,
			want: []pipeline.Question{
				{ID: "t1", Task: "hotpotqa", Question: "Q1?", Context: []pipeline.Paragraph{{Title: "T", Sentences: []string{"s."}}}},
				{ID: "t2", Task: "hotpotqa", Question: "Q2?", Answer: "A2"},
			},
		},
		{
			name: "fever without labels", file: "test.jsonl",
			content: "{\"id\": 1, \"claim\": \"A is B.\"}\n{\"id\": 2, \"label\": \"\", \"claim\": \"C is D.\"}\n",
			want: []pipeline.Question{
				{ID: "1", Task: "fever", Question: "A is B."},
				{ID: "2", Task: "fever", Question: "C is D."},
			},
		},
		{
			name: "a bad label is still refused", file: "test.jsonl",
			content: `{"id": 1, "label": "NOT ENOUGH INFORMATION", "claim": "A is B."}`,
			wantErr: `test.jsonl line 1: label "NOT ENOUGH INFORMATION"`,
		},
		{
			name: "a question is still required", file: "test.json",
			content: `[{"_id": "t1", "answer": "A"}]`,
			wantErr: `test.json record 0: missing "question"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filetest.Write(t, tt.file, tt.content)
			got, _, err := Load(path, Options{AnswersOptional: true})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("questions:\n got %+v\nwant %+v", got, tt.want)
			}
			if _, _, err := Load(path, Options{}); err == nil || !strings.Contains(err.Error(), "missing") {
				t.Errorf("without AnswersOptional: got %v, want a missing answer or label", err)
			}
		})
	}
}
