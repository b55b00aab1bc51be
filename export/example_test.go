package export

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

func TestRender(t *testing.T) {
	type turn struct {
		role, content string
		trainable     bool
	}
	fever := episodetest.Small()
	fever.Task, fever.Question = pipeline.TaskFEVER, "The Lantern Museum is in Oslo."
	tests := []struct {
		name     string
		ep       pipeline.Episode
		view     string
		opts     RenderOptions
		want     []turn
		wantText string
	}{
		{
			name: "react", ep: episodetest.Small(), view: ViewReAct,
			want: []turn{
				{"user", "Question: Where was the lantern museum built?", false},
				{"assistant", "Thought: Search the museum.\nAction: Search[Lantern Museum]", true},
				{"user", "Observation: The Lantern Museum is in Oslo.", false},
				{"assistant", "Thought: It is Oslo.\nAction: Finish[Oslo]", true},
			},
			wantText: "Question: Where was the lantern museum built?\nThought 1: Search the museum.\nAction 1: Search[Lantern Museum]\n" +
				"Observation 1: The Lantern Museum is in Oslo.\nThought 2: It is Oslo.\nAction 2: Finish[Oslo]",
		},
		{
			name: "act with system and trained observations", ep: episodetest.Small(), view: ViewAct,
			opts: RenderOptions{System: "Solve it.", TrainObservations: true},
			want: []turn{
				{"system", "Solve it.", false},
				{"user", "Question: Where was the lantern museum built?", false},
				{"assistant", "Action: Search[Lantern Museum]", true},
				{"user", "Observation: The Lantern Museum is in Oslo.", true},
				{"assistant", "Action: Finish[Oslo]", true},
			},
			wantText: "Question: Where was the lantern museum built?\nAction 1: Search[Lantern Museum]\n" +
				"Observation 1: The Lantern Museum is in Oslo.\nAction 2: Finish[Oslo]",
		},
		{
			name: "standard fever", ep: fever, view: ViewStandard,
			want: []turn{
				{"user", "Claim: The Lantern Museum is in Oslo.", false},
				{"assistant", "Answer: Oslo", true},
			},
			wantText: "Claim: The Lantern Museum is in Oslo.\nAnswer: Oslo",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := Render(tt.ep, tt.view, tt.opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if len(ex.Messages) != len(tt.want) {
				t.Fatalf("messages: got %d, want %d: %+v", len(ex.Messages), len(tt.want), ex.Messages)
			}
			for i, w := range tt.want {
				m := ex.Messages[i]
				if m.Role != w.role || m.Content != w.content || m.Trainable != w.trainable {
					t.Errorf("message %d: got %+v, want %+v", i, m, w)
				}
			}
			if ex.Text != tt.wantText {
				t.Errorf("text: got %q, want %q", ex.Text, tt.wantText)
			}
			if got, want := ex.NSteps, int64(len(ex.Steps)); got != want {
				t.Errorf("n_steps: got %d, want %d", got, want)
			}
			if !strings.HasPrefix(ex.Text, ex.Prompt()) || ex.Prompt()+ex.Completion() != ex.Text {
				t.Errorf("prompt %q + completion %q is not text %q", ex.Prompt(), ex.Completion(), ex.Text)
			}
			if err := Validate(&ex, ValidateOptions{CorrectOnly: true, TrainObservations: tt.opts.TrainObservations}); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestRenderUnknownView(t *testing.T) {
	if _, err := Render(episodetest.Small(), "cot", RenderOptions{}); err == nil {
		t.Error("Render with view cot: got nil error, want one")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(ex *Example)
		opts   ValidateOptions
		reason string
	}{
		{"empty question", func(ex *Example) { ex.Question = "" }, ValidateOptions{}, "question is empty"},
		{"empty answer", func(ex *Example) { ex.Answer = " " }, ValidateOptions{}, "answer is empty"},
		{"not correct", func(ex *Example) { ex.Correct = false }, ValidateOptions{CorrectOnly: true}, "not correct"},
		{"ends on observation", func(ex *Example) { ex.Messages = ex.Messages[:3] }, ValidateOptions{}, "last turn is a user turn"},
		{"no finish", func(ex *Example) { ex.Messages[3].Content = "Action: Search[x]" }, ValidateOptions{}, "not the assistant's Finish"},
		{"two users", func(ex *Example) { ex.Messages[1].Role = RoleUser }, ValidateOptions{}, "turn 2: role"},
		{"observation trainable", func(ex *Example) { ex.Messages[2].Trainable = true }, ValidateOptions{}, "user turn is marked trainable"},
		{"question trainable", func(ex *Example) { ex.Messages[0].Trainable = true }, ValidateOptions{TrainObservations: true}, "user turn is marked trainable"},
		{"finish in the middle", func(ex *Example) { ex.Steps[0].ActionType = "finish" }, ValidateOptions{}, "step 1 is a Finish"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := Render(episodetest.Small(), ViewReAct, RenderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tt.mod(&ex)
			err = Validate(&ex, tt.opts)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: got %v, want a *ValidationError", err)
			}
			if ve.ID != "ep1" {
				t.Errorf("id: got %q, want ep1", ve.ID)
			}
			if !strings.Contains(err.Error(), tt.reason) || !strings.Contains(err.Error(), "ep1") {
				t.Errorf("error %q does not name the id and %q", err, tt.reason)
			}
		})
	}
}

func TestChatTokens(t *testing.T) {
	c, err := bpe.Open("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		msgs []Message
		want int
	}{
		{nil, replyPriming},
		// user (1) + "The cat sat." (4) + 3 of template, then 3 to prime the reply.
		{[]Message{{Role: RoleUser, Content: "The cat sat."}}, 11},
		{[]Message{{Role: RoleUser, Content: "The cat sat."}, {Role: RoleAssistant, Content: ""}}, 15},
	}
	for _, tt := range tests {
		if got := ChatTokens(c, tt.msgs); got != tt.want {
			t.Errorf("ChatTokens(%v): got %d, want %d", tt.msgs, got, tt.want)
		}
	}
}

func TestSplitOf(t *testing.T) {
	val := 0
	for i := range 2000 {
		q := "q" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + itoa(i)
		s := SplitOf(7, q, 0.2)
		if again := SplitOf(7, q, 0.2); again != s {
			t.Fatalf("SplitOf(%q) not deterministic: %s then %s", q, s, again)
		}
		if s == SplitValidation {
			val++
		}
		if got := SplitOf(7, q, 0); got != SplitTrain {
			t.Fatalf("SplitOf(%q, 0): got %s, want train", q, got)
		}
	}
	if val < 300 || val > 500 {
		t.Errorf("validation share of 2000 at fraction 0.2: got %d, want about 400", val)
	}
	differ := 0
	for i := range 200 {
		if SplitOf(1, itoa(i), 0.5) != SplitOf(2, itoa(i), 0.5) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("split seeds 1 and 2 gave the same split for 200 questions")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
