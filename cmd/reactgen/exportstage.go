package main

import (
	"context"
	"iter"
	"path/filepath"

	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/pipeline"
)

// stageExport writes the training files and the dataset card from kept.jsonl.
func (a *app) stageExport(ctx context.Context, rs *runState) error {
	return rs.stage(ctx, "export", func(ctx context.Context) (map[string]int, error) {
		card, err := a.cardInfo(rs)
		if err != nil {
			return nil, err
		}
		dir := rs.dir.File(pipeline.ExportDir)
		res, err := export.Run(ctx, export.RunOptions{
			Config: rs.cfg.Export, Dir: dir,
			Kept: func() iter.Seq2[pipeline.Episode, error] { return pipeline.ReadKept(rs.dir.File(pipeline.KeptFile)) },
			Rejected: func() iter.Seq2[pipeline.Rejected, error] {
				return pipeline.ReadRejected(rs.dir.File(pipeline.RejectedFile))
			},
			Card: card, Logger: a.log,
		})
		if err != nil {
			return nil, err
		}
		outs := make([]pipeline.Output, 0, len(res.Files))
		for _, f := range res.Files {
			outs = append(outs, pipeline.Output{Path: filepath.ToSlash(filepath.Join(pipeline.ExportDir, f.Path)), Stage: "export",
				Format: f.Format, Split: f.Split, Rows: f.Rows, Bytes: f.Bytes, SHA256: f.SHA256})
		}
		rs.manifest.SetOutputs("export", outs)
		counts := map[string]int{"examples": res.Examples, "files": len(res.Files), "pairs": res.Pairs}
		for s, n := range res.Splits {
			counts["split:"+s] = n
		}
		return counts, nil
	})
}

// cardInfo gathers the run statistics the dataset card reports.
func (a *app) cardInfo(rs *runState) (export.CardInfo, error) {
	cfg := rs.cfg
	model := cfg.LLM.Model
	if cfg.Generate.Policy == "expert" {
		model = "expert"
	}
	s, err := summarize(rs.dir.Path)
	if err != nil {
		return export.CardInfo{}, err
	}
	info := export.CardInfo{RunID: rs.manifest.RunID, Model: model, PromptHash: rs.promptID,
		CorpusHash: rs.manifest.Results["corpus"], Task: cfg.Task.Name, Method: cfg.Generate.Method,
		Generated: s.Episodes, Kept: s.Kept, RejectReasons: s.RejectReasons, Usage: s.Usage,
		Accept: map[string]export.Accept{}}
	for class, c := range s.Classes {
		info.Accept[class] = export.Accept{Generated: c.Generated, Kept: c.Kept}
	}
	return info, nil
}
