package react

import (
	"strconv"
	"strings"

	"github.com/reactgen/reactgen/internal/python"
)

// Notebook reads the completion of ReAct step (1-based) as the paper's notebooks
// (hotpotqa.ipynb, FEVER.ipynb) do: the completion stripped of surrounding white space
// must hold "\nAction <step>: " exactly once; the text before it is the thought and the
// text after it, to the end, is the action, both as written (the environment judges the
// action). Otherwise ok is false and thought is the completion's first line, which the
// notebooks show before asking again for the action alone (see NotebookAction).
func Notebook(completion string, step int) (thought, action string, ok bool) {
	s := python.Strip(completion)
	sep := "\nAction " + strconv.Itoa(step) + ": "
	if i := strings.Index(s, sep); i >= 0 && !strings.Contains(s[i+len(sep):], sep) {
		return s[:i], s[i+len(sep):], true
	}
	thought, _, _ = strings.Cut(s, "\n")
	return thought, "", false
}

// NotebookAction is the action of a re-ask reply as the notebooks take it: the reply
// stripped of surrounding white space.
func NotebookAction(reply string) string { return python.Strip(reply) }
