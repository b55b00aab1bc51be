package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/safefile"
)

// ErrNotExemplarFile is wrapped by AppendExemplar's error when the file it would append
// to holds something else.
var ErrNotExemplarFile = errors.New("not an exemplar file")

// AppendExemplar appends ex to the exemplar file at path (reactgen's format, usable as
// generate.exemplars), creating it for task with the default instruction when it does not
// exist, and returns how many exemplars the file holds now. The file is replaced
// atomically, so a crash leaves the old one or the new one.
func AppendExemplar(path, task string, ex Exemplar) (int, error) {
	set := Set{Task: task, Instruction: DefaultInstruction(task)}
	if b, err := safefile.ReadFile(path, maxExemplarBytes); err == nil {
		if err := json.Unmarshal(b, &set); err != nil {
			return 0, fmt.Errorf("%s exists but is %w: %w", path, ErrNotExemplarFile, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	set.Exemplars = append(set.Exemplars, ex)
	if err := atomicfile.WriteFile(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(set)
	}); err != nil {
		return 0, err
	}
	return len(set.Exemplars), nil
}
