package filter

import (
	"fmt"

	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// class is what Stats counts an episode under: its question type, and for FEVER its
// gold label in the dataset's spelling (score.Label; labeled: it has one).
type class struct {
	qtype, label string
	labeled      bool
}

func (c *Chain) classOf(ep *pipeline.Episode) class {
	cl := class{qtype: ep.QuestionType}
	if c.task == pipeline.TaskFEVER && ep.Answer != "" {
		cl.label, _ = score.Label(ep.Answer)
		cl.labeled = true
	}
	return cl
}

func (c *Chain) countIn(st *Stats, cl class) {
	st.bumpClass(cl, func(s *ClassStats) { s.In++ })
}

// bumpClass applies add to the counts of cl's question type and of its label, where the
// episode has them.
func (st *Stats) bumpClass(cl class, add func(*ClassStats)) {
	if cl.qtype != "" {
		s := st.ByType[cl.qtype]
		add(&s)
		st.ByType[cl.qtype] = s
	}
	if cl.labeled {
		s := st.ByLabel[cl.label]
		add(&s)
		st.ByLabel[cl.label] = s
	}
}

func (c *Chain) emitKeep(st *Stats, rec record, cl class, keep func(record) error) error {
	st.Kept++
	if len(rec.masks) > 0 {
		st.MaskedEpisodes++
		if st.Masked == nil {
			st.Masked = map[string]int{}
		}
		for _, m := range rec.masks {
			st.Masked[m.Code]++
		}
	}
	st.bumpClass(cl, func(s *ClassStats) { s.Kept++ })
	if keep == nil {
		return nil
	}
	if err := keep(rec); err != nil {
		return fmt.Errorf("filter: keep episode %s: %w", rec.id, err)
	}
	return nil
}

func (c *Chain) emitReject(st *Stats, rec record, rejects []pipeline.Reject, reject func(record, []pipeline.Reject) error) error {
	st.Rejected++
	for _, r := range rejects {
		m := st.ByRule[r.Rule]
		if m == nil {
			m = map[string]int{}
			st.ByRule[r.Rule] = m
		}
		m[r.Code]++
	}
	if reject == nil {
		return nil
	}
	if err := reject(rec, rejects); err != nil {
		return fmt.Errorf("filter: reject episode %s: %w", rec.id, err)
	}
	return nil
}
