package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/finetune"
	"github.com/reactgen/reactgen/pipeline"
)

type trainOptions struct {
	run, provider, baseModel, format, suffix, baseURL, keyEnv string
	epochs, steps, batch                                      int
	lr                                                        float64
	newJob, detach                                            bool
	poll                                                      time.Duration
}

func (a *app) newTrainCmd() *cobra.Command {
	var o trainOptions
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Fine-tune a model on a run's export through OpenAI's fine-tuning API, and follow the job",
		Long: `Uploads the run's openai-tools export, or else its openai-chat export (--format picks),
train and validation splits, through the Files API — the rows as exported, less any
reasoning_content (OpenAI's fine-tuning format has no such field) — creates a
fine-tuning job with the base model and hyper-parameters (those not given are the
service's automatic choice; the ReAct paper's batch size was 64), and follows it until it ends, printing its
events. The job id, its status and the fine-tuned model are recorded in the run's
manifest as they happen: a re-run with the same settings attaches to the job instead of
creating another, and ^C stops following without stopping the job. Any server that
implements OpenAI's /v1/files and /v1/fine_tuning/jobs works (--base-url, else
$OPENAI_BASE_URL, else OpenAI's). The key is read from the variable --api-key-env names.`,
		Example: `  reactgen train --provider openai --run runs/demo --base-model gpt-4o-mini-2024-07-18 --epochs 3
  reactgen train --run runs/h1 --base-model gpt-4o-mini-2024-07-18 --steps 4000 --batch-size 64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runTrain(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.run, "run", "", "run directory whose export to train on")
	cmd.MarkFlagRequired("run")
	f.StringVar(&o.provider, "provider", "openai", "fine-tuning API: openai (OpenAI or any server implementing its fine-tuning API)")
	f.StringVar(&o.baseModel, "base-model", "", "model to fine-tune, e.g. gpt-4o-mini-2024-07-18")
	cmd.MarkFlagRequired("base-model")
	f.StringVar(&o.format, "format", "", "export format to upload: openai-tools or openai-chat (default: the first the export has)")
	f.StringVar(&o.suffix, "suffix", "", "suffix of the fine-tuned model's name")
	f.IntVar(&o.epochs, "epochs", 0, "epochs (0 = the service's default)")
	f.IntVar(&o.steps, "steps", 0, "optimizer steps instead of epochs: converted to whole epochs over the training rows at --batch-size (64, the paper's, when not given)")
	f.IntVar(&o.batch, "batch-size", 0, "batch size (0 = the service's automatic choice; the paper's was 64)")
	f.Float64Var(&o.lr, "lr-multiplier", 0, "learning-rate multiplier (0 = the service's default)")
	f.StringVar(&o.baseURL, "base-url", "", "fine-tuning API root ending in /v1 (llm.base_url's form); default $OPENAI_BASE_URL, else OpenAI's")
	f.StringVar(&o.keyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable that holds the API key")
	f.BoolVar(&o.newJob, "new-job", false, "start another job when the run's job failed, was cancelled or had other settings")
	f.BoolVar(&o.detach, "detach", false, "return once the job exists, without following it")
	f.DurationVar(&o.poll, "poll", 10*time.Second, "how often to check the job while following it")
	return cmd
}

func (a *app) runTrain(ctx context.Context, o trainOptions) error {
	if !(pipeline.RunDir{Path: o.run}).Exists() {
		return usagef("%s: %w", o.run, pipeline.ErrNoRun)
	}
	if o.epochs < 0 || o.steps < 0 || o.batch < 0 || o.lr < 0 {
		return usagef("--epochs, --steps, --batch-size and --lr-multiplier must not be negative")
	}
	if o.epochs > 0 && o.steps > 0 {
		return usagef("give --epochs or --steps, not both")
	}
	if o.steps > 0 && o.batch == 0 {
		// Steps become epochs only at a known batch size: the paper's, sent as such.
		o.batch = finetune.PaperBatchSize
		fmt.Fprintf(a.stderr, "--steps %d without --batch-size: converting at the paper's batch size %d, which the job is given\n", o.steps, o.batch)
	}
	base := o.baseURL
	if base == "" {
		base = a.getenv("OPENAI_BASE_URL")
	}
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	key := a.getenv(o.keyEnv)
	rec, err := finetune.Train(ctx, finetune.Options{
		Dir: o.run, API: finetune.APIOptions{BaseURL: base, APIKey: key, Timeout: 2 * time.Minute},
		Provider: o.provider, BaseModel: o.baseModel, Format: o.format, Suffix: o.suffix,
		Hyper:  pipeline.Hyperparameters{Epochs: o.epochs, Steps: o.steps, BatchSize: o.batch, LRMultiplier: o.lr},
		NewJob: o.newJob, Detach: o.detach, PollInterval: o.poll, Progress: a.stderr, Logger: a.log,
	})
	var se *finetune.SettingsError
	if errors.As(err, &se) {
		return &pipeline.InputError{Err: err}
	}
	if err != nil {
		return err
	}
	if rec.Status != pipeline.JobSucceeded {
		fmt.Fprintf(a.stdout, "fine-tuning job %s: %s (run the same command again to follow it)\n", rec.JobID, rec.Status)
		return nil
	}
	fmt.Fprintf(a.stdout, "fine-tuning job %s succeeded: %s\n", rec.JobID, rec.FineTunedModel)
	fmt.Fprintf(a.stdout, "evaluate it:\n  %s\n", finetune.EvalCommand(o.run, rec))
	return nil
}
