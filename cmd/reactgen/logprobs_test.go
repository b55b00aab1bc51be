package main

// llm.logprobs and llm.token_ids through the command line: the fake server answers
// log-probabilities and vLLM's token ids, the episode log keeps them per call, and the
// Parquet export carries them per step; without the keys no request asks for them.

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

func TestLogprobsAndTokenIDsReachTheRecordAndParquet(t *testing.T) {
	model := newFakeModel(t)
	srv := llmtest.NewServer(t, model.handle)
	tmp := t.TempDir()

	// Without the keys: nothing asked, nothing kept.
	res, plain := generateWith(t, filepath.Join(tmp, "plain"), srv.URL, map[string]any{"task.limit": 6}, nil)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, r := range srv.Log() {
		for _, k := range []string{"logprobs", "top_logprobs", "return_token_ids"} {
			if _, ok := r.Body[k]; ok {
				t.Errorf("a request without llm.logprobs sent %s: %s", k, r.Raw)
			}
		}
	}
	for _, ep := range logLines(t, filepath.Join(plain, pipeline.EpisodesFile)) {
		for _, st := range ep.Steps {
			for _, c := range st.Calls {
				if c.Logprobs != nil || c.PromptTokenIDs != nil || c.CompletionTokenIDs != nil {
					t.Errorf("%s: a call without the keys holds logprobs or token ids", ep.ID)
				}
			}
		}
	}

	sets := map[string]any{"task.limit": 6, "llm.logprobs": true, "llm.token_ids": true,
		"export.formats": []string{"parquet"}, "export.validation_fraction": 0}
	res, run := generateWith(t, filepath.Join(tmp, "logprobs"), srv.URL, sets, nil)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	calls := 0
	for _, ep := range logLines(t, filepath.Join(run, pipeline.EpisodesFile)) {
		for i, st := range ep.Steps {
			for _, c := range st.Calls {
				calls++
				tokens := llmtest.FakeTokens(c.Completion)
				var want []float64
				for k := range tokens {
					want = append(want, llmtest.FakeLogprob(k))
				}
				if !slices.Equal(c.Logprobs, want) || !slices.Equal(c.CompletionTokenIDs, llmtest.FakeTokenIDs(tokens)) || len(c.PromptTokenIDs) == 0 {
					t.Errorf("%s step %d: logprobs %v, completion ids %v, %d prompt ids; want %v", ep.ID, i+1, c.Logprobs, c.CompletionTokenIDs, len(c.PromptTokenIDs), want)
				}
			}
		}
	}
	if calls == 0 {
		t.Fatal("no calls")
	}

	cfg := filepath.Join(tmp, "logprobs", "cfg", "config.yaml")
	for _, stage := range []string{"filter", "export"} {
		if r := invoke(t, "", nil, stage, "--config", cfg, "--out", run); r.code != 0 {
			t.Fatalf("%s: exit %d: %s", stage, r.code, r.stderr)
		}
	}
	kept := map[string]pipeline.Episode{}
	for ep, err := range pipeline.ReadKept(filepath.Join(run, pipeline.KeptFile)) {
		if err != nil {
			t.Fatal(err)
		}
		kept[ep.ID] = ep
	}
	rows := 0
	for _, ex := range readParquetExamples(t, filepath.Join(run, "export", "data", "train-00000-of-00001.parquet")) {
		ep, ok := kept[ex.ID]
		if !ok {
			t.Fatalf("parquet row %s is no kept episode", ex.ID)
		}
		rows++
		for i, st := range ex.Steps {
			c := ep.Steps[i].Calls[len(ep.Steps[i].Calls)-1]
			if !slices.Equal(st.Logprobs, c.Logprobs) || !slices.Equal(st.PromptTokenIDs, c.PromptTokenIDs) || !slices.Equal(st.CompletionTokenIDs, c.CompletionTokenIDs) || len(st.Logprobs) == 0 {
				t.Errorf("%s step %d: parquet %v %v %v, call %v %v %v", ex.ID, i+1, st.Logprobs, st.PromptTokenIDs, st.CompletionTokenIDs, c.Logprobs, c.PromptTokenIDs, c.CompletionTokenIDs)
			}
		}
	}
	if rows == 0 || rows != len(kept) {
		t.Errorf("parquet rows %d, kept %d", rows, len(kept))
	}
}

// readParquetExamples reads an exported Parquet file back into examples with the Arrow
// readers.
func readParquetExamples(t *testing.T, path string) []export.Example {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 1000)
	defer tr.Release()
	var out []export.Example
	for tr.Next() {
		exs, err := export.DecodeRecord(tr.Record())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, exs...)
	}
	return out
}
