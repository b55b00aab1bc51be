package filter

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"path/filepath"
	"strings"

	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// NGram is the overlap length decontaminate looks for, in normalised tokens.
const NGram = 13

type evalRef struct {
	id, file string
}

// decontaminate drops episodes whose question is an evaluation question: the same
// normalised text (NormalizeAnswer), or a shared run of NGram normalised tokens.
type decontaminate struct {
	exact    map[string]evalRef
	grams    map[uint64]evalRef
	reported map[string]bool
	found    []Contamination
}

func (*decontaminate) Name() string { return "decontaminate" }

func (d *decontaminate) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	ref, match, ok := d.match(ep.Question)
	if !ok {
		return true, pipeline.Reject{}
	}
	if d.reported != nil && !d.reported[ep.QuestionID] {
		d.reported[ep.QuestionID] = true
		d.found = append(d.found, Contamination{QuestionID: ep.QuestionID, EvalID: ref.id, EvalFile: ref.file, Match: match})
	}
	return reject("decontaminate", CodeContaminated, fmt.Sprintf("%s match with %s in %s", match, ref.id, ref.file))
}

func (d *decontaminate) match(q string) (evalRef, string, bool) {
	norm := score.NormalizeAnswer(q)
	if ref, ok := d.exact[norm]; ok {
		return ref, "exact", true
	}
	toks := strings.Fields(norm)
	for i := 0; i+NGram <= len(toks); i++ {
		if ref, ok := d.grams[gramHash(toks[i:i+NGram])]; ok {
			return ref, fmt.Sprintf("%d-gram", NGram), true
		}
	}
	return evalRef{}, "", false
}

func gramHash(toks []string) uint64 {
	h := fnv.New64a()
	for _, t := range toks {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// loadDecontaminate reads the evaluation files with the project's question reader
// (dataset), answers optional, since evaluation splits may hold none.
func loadDecontaminate(files []string) (*decontaminate, error) {
	if len(files) == 0 {
		return nil, &pipeline.ConfigError{Key: "filter.eval_files", Message: ErrNoEvalFiles.Error()}
	}
	d := &decontaminate{exact: map[string]evalRef{}, grams: map[uint64]evalRef{}}
	for _, f := range files {
		if err := d.add(f); err != nil {
			return nil, fmt.Errorf("filter.eval_files: %w", err)
		}
	}
	return d, nil
}

// add indexes the questions of one evaluation file.
func (d *decontaminate) add(path string) error {
	r, err := dataset.Open(path, dataset.Options{AnswersOptional: true})
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		ref := evalRef{id: rec.ID, file: filepath.Base(path)}
		norm := score.NormalizeAnswer(rec.Question.Question)
		if _, ok := d.exact[norm]; !ok {
			d.exact[norm] = ref
		}
		toks := strings.Fields(norm)
		for i := 0; i+NGram <= len(toks); i++ {
			if h := gramHash(toks[i : i+NGram]); d.grams[h] == (evalRef{}) {
				d.grams[h] = ref
			}
		}
	}
}
