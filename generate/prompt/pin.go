package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"

	"github.com/reactgen/reactgen/pipeline"
)

// Configured loads the exemplars cfg names for a task (fsys holds the embedded defaults),
// truncated to generate.num_exemplars and with generate.instruction applied; the CoT
// prompts' own exemplars when generate.cot_exemplars names them (nil otherwise),
// truncated alike; and the id that pins them for resume: a hash of the sets as loaded.
func Configured(cfg pipeline.GenerateConfig, task string, fsys fs.FS) (Set, *Set, string, error) {
	set, err := Load(cfg.Exemplars, task, fsys)
	if err != nil {
		return Set{}, nil, "", &pipeline.ConfigError{Key: "generate.exemplars", Message: err.Error()}
	}
	set = set.Truncate(cfg.NumExemplars)
	if cfg.Instruction != "" {
		set = set.WithInstruction(cfg.Instruction)
	}
	var cot *Set
	if cfg.CoTExemplars != "" {
		c, err := Load(cfg.CoTExemplars, task, fsys)
		if err == nil {
			_, err = c.For(MethodCoT)
		}
		if err != nil {
			return Set{}, nil, "", &pipeline.ConfigError{Key: "generate.cot_exemplars", Message: err.Error()}
		}
		c = c.Truncate(cfg.NumExemplars)
		cot = &c
	}
	h := sha256.New()
	fmt.Fprintf(h, "%+v", set)
	if cot != nil {
		fmt.Fprintf(h, "%+v", *cot)
	}
	return set, cot, hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Input pins the exemplar file by the sha256 of its bytes: the embedded default for the
// task in fsys, or the file a FILE or FILE#key reference names.
func Input(ref, task string, fsys fs.FS) (pipeline.Input, error) {
	if ref == "" {
		name := "prompts/" + task + ".json"
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return pipeline.Input{}, err
		}
		sum := sha256.Sum256(b)
		return pipeline.Input{Role: "exemplars", Path: "embedded:" + name, Bytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}, nil
	}
	file, key, _ := strings.Cut(ref, "#")
	in, err := pipeline.DescribeInput("exemplars", file)
	if err != nil {
		return pipeline.Input{}, err
	}
	if key != "" {
		in.Path += "#" + key
	}
	return in, nil
}
