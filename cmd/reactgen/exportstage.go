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
	info := export.CardInfo{RunID: rs.manifest.RunID, Model: model, PromptHash: rs.promptID,
		CorpusHash: rs.manifest.Results["corpus"], Task: cfg.Task.Name, Method: cfg.Generate.Method,
		RejectReasons: map[string]int{}, Accept: map[string]export.Accept{}}
	class := func(ep *pipeline.Episode) string {
		if ep.QuestionType != "" {
			return ep.QuestionType
		}
		return "all"
	}
	for ep, err := range pipeline.ReadEpisodes(rs.dir.File(pipeline.EpisodesFile)) {
		if err != nil {
			return info, err
		}
		info.Generated++
		info.Usage = info.Usage.Add(ep.Usage)
		acc := info.Accept[class(&ep)]
		acc.Generated++
		info.Accept[class(&ep)] = acc
	}
	for ep, err := range pipeline.ReadKept(rs.dir.File(pipeline.KeptFile)) {
		if err != nil {
			return info, err
		}
		info.Kept++
		acc := info.Accept[class(&ep)]
		acc.Kept++
		info.Accept[class(&ep)] = acc
	}
	for r, err := range pipeline.ReadRejected(rs.dir.File(pipeline.RejectedFile)) {
		if err != nil {
			return info, err
		}
		for _, x := range r.Rejects {
			info.RejectReasons[x.Rule+"/"+x.Code]++
		}
	}
	return info, nil
}
