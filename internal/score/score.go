// Package score holds the answer metrics that every stage shares: the official HotpotQA
// normalisation, exact match and F1, and the FEVER label rule. It consumes a prediction
// and a gold answer (strings) and produces a verdict; it reads no file and keeps no
// state. generate scores episodes as they finish, the importer re-scores imported ones,
// and filter re-scores kept ones, all through Score, so the three can never disagree.
package score

import (
	"strings"

	"github.com/reactgen/reactgen/internal/python"
	"github.com/reactgen/reactgen/pipeline"
)

// punctuation is Python's string.punctuation, the set the official HotpotQA and SQuAD
// scripts strip. Unicode punctuation (dashes, curly quotes) is kept, as there.
const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// NormalizeAnswer is the official HotpotQA/SQuAD answer normalisation (normalize_answer
// in wrappers.py), with Python's string rules: lower-case as str.lower() does (so "ΟΔΟΣ"
// is "οδος" and "İ" is "i̇"), drop the characters of string.punctuation, drop the
// articles a, an and the where they stand as whole words (re's \b, which is
// Unicode-aware), and join the words str.split() finds (white space includes U+001C to
// U+001F) with single spaces.
func NormalizeAnswer(s string) string {
	s = python.Lower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(punctuation, r) {
			return -1
		}
		return r
	}, s)
	s = removeArticles(s)
	return strings.Join(python.Split(s), " ")
}

// removeArticles replaces every maximal run of word characters that is exactly a, an or
// the with a space, which is what re.sub(r'\b(a|an|the)\b', ' ', s) does.
func removeArticles(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if !python.IsWord(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && python.IsWord(rs[j]) {
			j++
		}
		switch w := string(rs[i:j]); w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}

// ExactMatch reports whether pred and gold are equal after NormalizeAnswer.
func ExactMatch(pred, gold string) bool {
	return NormalizeAnswer(pred) == NormalizeAnswer(gold)
}

// F1 is the official HotpotQA token-overlap F1 with its precision and recall. When either
// normalised side is yes, no or noanswer and the two differ, all three are 0; tokens are
// counted with multiplicity (Python's Counter intersection). Two empty answers score 0.
func F1(pred, gold string) (f1, precision, recall float64) {
	return f1Normalized(NormalizeAnswer(pred), NormalizeAnswer(gold))
}

// f1Normalized is F1 of two answers already normalised.
func f1Normalized(np, ng string) (f1, precision, recall float64) {
	special := func(s string) bool { return s == "yes" || s == "no" || s == "noanswer" }
	if (special(np) || special(ng)) && np != ng {
		return 0, 0, 0
	}
	pt, gt := python.Split(np), python.Split(ng)
	counts := make(map[string]int, len(gt))
	for _, t := range gt {
		counts[t]++
	}
	same := 0
	for _, t := range pt {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0, 0, 0
	}
	precision = float64(same) / float64(len(pt))
	recall = float64(same) / float64(len(gt))
	return 2 * precision * recall / (precision + recall), precision, recall
}

// feverLabels are the three FEVER labels in the dataset's spelling, with their
// normalised forms.
var feverLabels = [...]struct{ label, norm string }{
	{pipeline.LabelSupports, NormalizeAnswer(pipeline.LabelSupports)},
	{pipeline.LabelRefutes, NormalizeAnswer(pipeline.LabelRefutes)},
	{pipeline.LabelNEI, NormalizeAnswer(pipeline.LabelNEI)},
}

// Label is the FEVER label rule, the one every stage uses: it returns the label that
// answer names, in the dataset's spelling (SUPPORTS, REFUTES, NOT ENOUGH INFO), and true;
// or answer unchanged and false. An answer names a label when the two are equal after
// NormalizeAnswer, which is how the official ReAct code (wrappers.py, FeverWrapper)
// scores a FEVER answer: so "supports!", "'SUPPORTS'" and "Refutes." name a label, while
// "NOT ENOUGH INFORMATION", "Not_Enough_Info" and "not supported" do not.
func Label(answer string) (string, bool) {
	n := NormalizeAnswer(answer)
	for _, l := range feverLabels {
		if n == l.norm {
			return l.label, true
		}
	}
	return answer, false
}

// Score scores a prediction against the gold answer for a task. FEVER is scored as the
// official code scores it, exact match after NormalizeAnswer (so a prediction is correct
// exactly when Label maps it to the gold label), with em = f1 = 1 or 0; any other task is
// scored as HotpotQA, where correct means exact match.
func Score(task, pred, gold string) (correct bool, em, f1 float64) {
	np, ng := NormalizeAnswer(pred), NormalizeAnswer(gold)
	if task == pipeline.TaskFEVER {
		if np == ng {
			return true, 1, 1
		}
		return false, 0, 0
	}
	f1, _, _ = f1Normalized(np, ng)
	if np == ng {
		return true, 1, f1
	}
	return false, 0, f1
}
