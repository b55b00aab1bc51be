package score

import (
	"math"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

func TestNormalizeAnswer(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"lower and punctuation", "Hello, World!", "hello world"},
		{"articles dropped", "The Beatles and a band", "beatles and band"},
		{"article an", "An apple", "apple"},
		{"article inside word kept", "theater another anatomy", "theater another anatomy"},
		{"article after punctuation removal", "the-the", "thethe"},
		{"whitespace collapsed", "  New\t\nYork  ", "new york"},
		{"all punctuation", `!"#$%&'()*+,-./:;<=>?@[\]^_` + "`{|}~", ""},
		{"unicode dash kept", "1990–1995", "1990–1995"},
		{"unicode dash separates article", "a–b", "–b"},
		{"unicode letters", "Émile Zola", "émile zola"},
		{"apostrophe removed", "Rock 'n' Roll", "rock n roll"},
		{"empty", "", ""},
		// What wrappers.py's normalize_answer returns under Python 3.11 (see
		// TestNormalizeAnswerPython).
		{"python", "Paris\u001f", "paris"},
		{"python", "Paris\u001c\u001d\u001e", "paris"},
		{"python", "The\u001fEiffel Tower", "eiffel tower"},
		{"python", "ΟΔΟΣ", "οδος"},
		{"python", "οδος", "οδος"},
		{"python", "ΟΔΟΣ ΑΛΦΑ", "οδος αλφα"},
		{"python", "İstanbul", "i\u0307stanbul"},
		{"python", "istanbul", "istanbul"},
		{"python", "the\u3000Beatles", "beatles"},
		{"python", "a\u0085b", "b"},
		{"python", "an\u2028apple", "apple"},
		{"python", "The\u200bBeatles", "\u200bbeatles"},
		{"python", "Σ", "σ"},
		{"python", "ΑΣ.", "ας"},
		{"python", "x\u180ethe", "x\u180e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NormalizeAnswer(tt.in); got != tt.want {
				t.Errorf("NormalizeAnswer(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestExactMatch(t *testing.T) {
	tests := []struct {
		pred, gold string
		want       bool
	}{
		{"The Eiffel Tower", "eiffel tower", true},
		{"Eiffel Tower.", "Eiffel tower", true},
		{"Eiffel", "Eiffel Tower", false},
		{"", "", true},
		{"", "x", false},
		{"theater", "ater", false},
	}
	for _, tt := range tests {
		t.Run(tt.pred+"|"+tt.gold, func(t *testing.T) {
			if got := ExactMatch(tt.pred, tt.gold); got != tt.want {
				t.Errorf("ExactMatch(%q, %q): got %v, want %v", tt.pred, tt.gold, got, tt.want)
			}
		})
	}
}

func TestF1(t *testing.T) {
	tests := []struct {
		name          string
		pred, gold    string
		f1, prec, rec float64
	}{
		{"exact", "Barack Obama", "barack obama", 1, 1, 1},
		{"partial", "president Barack Obama", "Barack Obama", 0.8, 2.0 / 3, 1},
		{"yes vs no", "yes", "no", 0, 0, 0},
		{"yes vs phrase containing yes", "yes", "yes indeed", 0, 0, 0},
		{"noanswer gold", "something", "noanswer", 0, 0, 0},
		{"yes equal", "Yes.", "yes", 1, 1, 1},
		{"empty prediction", "", "Paris", 0, 0, 0},
		{"both empty", "", "", 0, 0, 0},
		{"no overlap", "London", "Paris", 0, 0, 0},
		{"repeated tokens counted once each", "new new new york", "new york", 2 * 0.5 * 1 / 1.5, 0.5, 1},
		{"repeated in gold", "new", "new new york", 0.5, 1, 1.0 / 3},
		{"articles ignored", "the cat", "a cat", 1, 1, 1},
		{"unicode", "Émile Zola", "émile", 2 * 0.5 * 1 / 1.5, 0.5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f1, p, r := F1(tt.pred, tt.gold)
			if !near(f1, tt.f1) || !near(p, tt.prec) || !near(r, tt.rec) {
				t.Errorf("F1(%q, %q): got (%v, %v, %v), want (%v, %v, %v)", tt.pred, tt.gold, f1, p, r, tt.f1, tt.prec, tt.rec)
			}
		})
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name, task, pred, gold string
		correct                bool
		em, f1                 float64
	}{
		{"fever equal", "fever", "supports ", "SUPPORTS", true, 1, 1},
		{"fever differ", "fever", "REFUTES", "SUPPORTS", false, 0, 0},
		{"fever nei", "fever", "Not Enough Info", "NOT ENOUGH INFO", true, 1, 1},
		// The cases where the official rule (wrappers.py) and a trim-and-upper-case
		// comparison disagree.
		{"fever punctuation stripped", "fever", "supports!", "SUPPORTS", true, 1, 1},
		{"fever quotes stripped", "fever", "'SUPPORTS'", "SUPPORTS", true, 1, 1},
		{"fever long nei spelling is not the label", "fever", "NOT ENOUGH INFORMATION", "NOT ENOUGH INFO", false, 0, 0},
		{"fever underscores are not spaces", "fever", "NOT_ENOUGH_INFO", "NOT ENOUGH INFO", false, 0, 0},
		{"fever negation is not the label", "fever", "not supported", "SUPPORTS", false, 0, 0},
		{"hotpot exact", "hotpotqa", "the Beatles", "Beatles", true, 1, 1},
		{"hotpot partial", "hotpotqa", "Barack Obama Jr", "Barack Obama", false, 0, 0.8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, em, f1 := Score(tt.task, tt.pred, tt.gold)
			if c != tt.correct || em != tt.em || !near(f1, tt.f1) {
				t.Errorf("Score(%q, %q, %q): got (%v, %v, %v), want (%v, %v, %v)", tt.task, tt.pred, tt.gold, c, em, f1, tt.correct, tt.em, tt.f1)
			}
		})
	}
}

func TestLabel(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"SUPPORTS", "SUPPORTS", true},
		{" supports ", "SUPPORTS", true},
		{"supports!", "SUPPORTS", true},
		{"'SUPPORTS'", "SUPPORTS", true},
		{"Refutes.", "REFUTES", true},
		{"the REFUTES", "REFUTES", true}, // articles go, as in the official normalisation
		{"not  enough info", "NOT ENOUGH INFO", true},
		{"Not Enough Info.", "NOT ENOUGH INFO", true},
		{"NOT ENOUGH INFORMATION", "NOT ENOUGH INFORMATION", false},
		{"NOT_ENOUGH_INFO", "NOT_ENOUGH_INFO", false},
		{"supported", "supported", false},
		{"not supported", "not supported", false},
		{"unsupported", "unsupported", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := Label(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Label(%q): got (%q, %v), want (%q, %v)", tt.in, got, ok, tt.want, tt.ok)
			}
			// Label and Score are one rule: an answer scores against a gold label
			// exactly when Label maps it to that label.
			for _, l := range feverLabels {
				correct, _, _ := Score(pipeline.TaskFEVER, tt.in, l.label)
				if correct != (ok && got == l.label) {
					t.Errorf("Score(fever, %q, %q) = %v, but Label gives (%q, %v)", tt.in, l.label, correct, got, ok)
				}
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestNormalizeAnswerPython holds what wrappers.py's normalize_answer returns under
// Python 3.11 for text at the edges of white space and letter case: str.split() splits
// at U+001C to U+001F and U+0085 as well as at Go's white space, str.lower() maps a
// final capital sigma to ς and İ to i̇ (i, U+0307), and re's \b sees a format character
// such as U+200B or U+180E as a non-word character.
func TestNormalizeAnswerPython(t *testing.T) {
	// NormalizeAnswer of such text is in TestNormalizeAnswer's "python" cases.
	// normalize_answer(pred) == normalize_answer(gold), the paper's reward, in Python.
	pairs := []struct {
		pred, gold string
		reward     bool
	}{
		{"οδος", "ΟΔΟΣ", true},
		{"Paris\u001f", "Paris", true},
		{"İstanbul", "istanbul", false},
		{"i\u0307stanbul", "İstanbul", true},
		{"ΟΔΟΣ", "οδοσ", false},
		{"The\u001eBeatles", "Beatles", true},
		{"σ", "Σ", true},
		{"ας", "ΑΣ", true},
	}
	for _, p := range pairs {
		for _, task := range []string{pipeline.TaskHotpotQA, pipeline.TaskFEVER} {
			if got, _, _ := Score(task, p.pred, p.gold); got != p.reward {
				t.Errorf("%s: Score(%q, %q) = %v, Python's reward %v", task, p.pred, p.gold, got, p.reward)
			}
		}
	}
	if f1, _, _ := F1("Paris\u001fFrance", "paris france"); f1 != 1 {
		t.Errorf("F1 of words split at U+001F: got %v, want 1", f1)
	}
}
