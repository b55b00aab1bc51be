package finetune

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reactgen/reactgen/internal/redact"
	"github.com/reactgen/reactgen/internal/retry"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// Formats a job can be trained on, in the order Train picks one when none is named.
var Formats = []string{"openai-tools", "openai-chat"}

// PaperBatchSize is the batch size the ReAct paper fine-tuned with.
const PaperBatchSize = 64

// MaxUploadBytes bounds an export file train uploads (OpenAI takes training files up to
// 512 MB); the file is read inside the run directory, never through a link out of it.
const MaxUploadBytes = 512 << 20

// Options configure Train.
type Options struct {
	Dir       string // the run directory
	API       APIOptions
	Provider  string // "openai": the only one so far
	BaseModel string
	Format    string // openai-chat or openai-tools; empty picks the first the export has
	Suffix    string
	Hyper     pipeline.Hyperparameters
	// NewJob starts another job when the run already has one that failed, was cancelled
	// or was made with other settings. Without it, Train attaches to the run's job.
	NewJob bool
	// Detach returns once the job exists, without following it.
	Detach       bool
	PollInterval time.Duration // between status checks while following; 0 = 10 s
	Progress     io.Writer     // progress lines; nil = none
	Logger       *slog.Logger
}

// ErrJobFailed is returned when the job ended failed or cancelled.
var ErrJobFailed = errors.New("fine-tuning job did not succeed")

// Train uploads the run's export, creates the fine-tuning job and follows it until it
// ends, recording each step in the manifest (pipeline.Manifest.Training) as it happens:
// the uploaded file ids before the job is created, the job id as soon as it exists, every
// status change while it is followed. A re-run with the same settings attaches to the
// recorded job (it neither uploads nor creates again); a cancelled ctx stops following
// and leaves the job running on the service. The run directory's lock is held
// throughout, so two followers never race.
func Train(ctx context.Context, o Options) (pipeline.TrainingJob, error) {
	if o.Provider != "" && o.Provider != "openai" {
		return pipeline.TrainingJob{}, fmt.Errorf("--provider %q: only openai (any server implementing OpenAI's fine-tuning API) is supported", o.Provider)
	}
	if o.BaseModel == "" {
		return pipeline.TrainingJob{}, errors.New("a base model is required (--base-model)")
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	api, err := NewAPI(o.API)
	if err != nil {
		return pipeline.TrainingJob{}, err
	}
	lock, err := pipeline.AcquireLock(o.Dir, "train")
	if err != nil {
		return pipeline.TrainingJob{}, err
	}
	defer lock.Release()
	m, err := pipeline.ReadManifest(o.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return pipeline.TrainingJob{}, fmt.Errorf("%s: %w", o.Dir, pipeline.ErrNoRun)
	}
	if err != nil {
		return pipeline.TrainingJob{}, err
	}
	t := &trainer{o: o, api: api, m: m}
	return t.run(ctx)
}

type trainer struct {
	o   Options
	api *API
	m   *pipeline.Manifest
}

// save writes the manifest with rec as the current (last) training job.
func (t *trainer) save(rec *pipeline.TrainingJob) error {
	rec.Updated = time.Now().UTC()
	n := len(t.m.Training)
	if n > 0 && t.m.Training[n-1].Created.Equal(rec.Created) {
		t.m.Training[n-1] = *rec
	} else {
		t.m.Training = append(t.m.Training, *rec)
	}
	return t.m.Write(t.o.Dir)
}

func (t *trainer) run(ctx context.Context) (pipeline.TrainingJob, error) {
	format, files, data, err := t.exportFiles()
	if err != nil {
		return pipeline.TrainingJob{}, err
	}
	hp := t.o.Hyper
	if hp.Steps > 0 {
		if hp.Epochs > 0 {
			return pipeline.TrainingJob{}, errors.New("give epochs or steps, not both")
		}
		hp.Epochs = EpochsForSteps(hp.Steps, max(hp.BatchSize, 1), files[0].Rows)
		fmt.Fprintf(t.o.Progress, "%d steps at batch size %d over %d training rows: %d epochs\n", hp.Steps, hp.BatchSize, files[0].Rows, hp.Epochs)
	}
	want := pipeline.TrainingJob{Provider: "openai", BaseURL: redact.URL(t.api.base), BaseModel: t.o.BaseModel, Format: format,
		Suffix: t.o.Suffix, Hyperparameters: hp, Files: files}

	var rec pipeline.TrainingJob
	if n := len(t.m.Training); n > 0 {
		last := t.m.Training[n-1]
		same := sameSettings(last, want)
		switch {
		case same && last.JobID != "" && last.Status != pipeline.JobFailed && last.Status != pipeline.JobCancelled:
			fmt.Fprintf(t.o.Progress, "attaching to fine-tuning job %s (%s)\n", last.JobID, last.Status)
			rec = last
		case same && last.JobID == "":
			rec = last // uploaded, never created: carry on from the uploads
		case t.o.NewJob:
		case !same:
			return pipeline.TrainingJob{}, &SettingsError{Dir: t.o.Dir, Job: last, Diff: diffSettings(last, want)}
		default:
			return last, fmt.Errorf("%w: job %s ended %s: %s (pass --new-job to start another)", ErrJobFailed, last.JobID, last.Status, orNone(last.Error))
		}
	}
	resumed := !rec.Created.IsZero()
	if resumed && rec.Intent == "" {
		rec.Intent = newIntent() // a record written before intents were
	}
	if !resumed {
		rec = want
		rec.Created = time.Now().UTC()
		rec.Intent = newIntent()
		rec.Status = statusUploading
		// The intent is durable before anything is sent: a kill from here on leaves a
		// record that the next run resumes (finding its uploads and job) rather than
		// starting over.
		if err := t.save(&rec); err != nil {
			return rec, err
		}
	}
	if err := t.upload(ctx, &rec, data, resumed); err != nil {
		return rec, err
	}
	if rec.JobID == "" {
		if err := t.create(ctx, &rec, resumed); err != nil {
			return rec, err
		}
	}
	if t.o.Detach && !pipeline.JobDone(rec.Status) {
		return rec, nil
	}
	return t.follow(ctx, &rec)
}

// upload sends the files that have no file id yet, recording each id as it arrives. A
// resumed intent first looks for its upload on the service (a kill may have come after
// the service stored the file and before its id was recorded).
func (t *trainer) upload(ctx context.Context, rec *pipeline.TrainingJob, data [][]byte, resumed bool) error {
	for i := range rec.Files {
		f := &rec.Files[i]
		if f.FileID != "" {
			continue
		}
		if id := t.uploaded(f.SHA256); id != "" {
			f.FileID = id // an earlier job of this run uploaded the same bytes
			continue
		}
		name := uploadName(t.m.RunID, rec.Format, f.Split, f.SHA256)
		if resumed {
			found, ok, err := t.api.FindFile(ctx, func(sf File) bool {
				return sf.Name == name && sf.Bytes == f.Bytes && sf.Status != "error" && sf.Status != "deleted"
			})
			switch {
			case err != nil && !absent(err):
				return fmt.Errorf("look for an earlier upload of %s (a re-run must not upload it twice): %w", name, err)
			case err != nil:
				t.o.Logger.Warn("the service lists no files; uploading again", "file", name, "err", err)
			case ok:
				fmt.Fprintf(t.o.Progress, "found the upload of an earlier, interrupted run: %s (%s)\n", found.ID, name)
				if err := t.api.WaitProcessed(ctx, found.ID, name, min(t.o.PollInterval, 2*time.Second)); err != nil {
					return err
				}
				f.FileID = found.ID
				rec.Status = statusUploaded
				if err := t.save(rec); err != nil {
					return err
				}
				continue
			}
		}
		fmt.Fprintf(t.o.Progress, "uploading %s (%d rows, %d bytes)\n", strings.Join(f.Paths, " + "), f.Rows, f.Bytes)
		id, err := t.api.Upload(ctx, name, data[i], min(t.o.PollInterval, 2*time.Second))
		if err != nil {
			return err
		}
		f.FileID = id
		rec.Status = statusUploaded
		if err := t.save(rec); err != nil {
			return err
		}
	}
	return nil
}

// Statuses of a record before its job exists.
const (
	statusUploading = "uploading"
	statusUploaded  = "uploaded"
	statusCreating  = "creating"
)

// Metadata keys of the jobs Train creates.
const (
	metaIntent = "reactgen_intent"
	metaRun    = "reactgen_run"
)

// create creates rec's job, recording the intent first; a resumed intent first looks for
// the job on the service, which a kill between the create call and its record left
// unknown here.
func (t *trainer) create(ctx context.Context, rec *pipeline.TrainingJob, resumed bool) error {
	if resumed && rec.Status == statusCreating {
		job, ok, err := t.api.ListJobs(ctx, func(j Job) bool { return t.ours(rec, j) })
		switch {
		case err != nil && !absent(err):
			return fmt.Errorf("look for the job an interrupted run may have created (a re-run must not create it twice): %w", err)
		case err != nil:
			t.o.Logger.Warn("the service lists no fine-tuning jobs, so a job an interrupted run created cannot be found; creating one", "err", err)
		case ok:
			rec.JobID, rec.Status, rec.Error = job.ID, job.Status, ""
			if err := t.save(rec); err != nil {
				return fmt.Errorf("fine-tuning job %s was found but could not be recorded: %w", job.ID, err)
			}
			fmt.Fprintf(t.o.Progress, "found fine-tuning job %s of an earlier, interrupted run (%s)\n", job.ID, job.Status)
			return nil
		}
	}
	rec.Status = statusCreating
	if err := t.save(rec); err != nil {
		return err
	}
	req := JobRequest{Model: rec.BaseModel, TrainingFile: rec.Files[0].FileID, Suffix: rec.Suffix,
		Epochs: rec.Hyperparameters.Epochs, BatchSize: rec.Hyperparameters.BatchSize, LRMultiplier: rec.Hyperparameters.LRMultiplier,
		Metadata: map[string]string{metaIntent: rec.Intent, metaRun: t.m.RunID}}
	if len(rec.Files) > 1 {
		req.ValidationFile = rec.Files[1].FileID
	}
	job, err := t.api.Create(ctx, req)
	if err == nil {
		err = t.check(rec, job)
	}
	if err != nil {
		rec.Error = err.Error()
		if serr := t.save(rec); serr != nil {
			return errors.Join(err, serr)
		}
		return err
	}
	rec.JobID, rec.Status, rec.Error = job.ID, job.Status, ""
	if err := t.save(rec); err != nil {
		return fmt.Errorf("fine-tuning job %s was created but could not be recorded (a re-run finds it by its metadata): %w", job.ID, err)
	}
	fmt.Fprintf(t.o.Progress, "created fine-tuning job %s on %s (base model %s, %s)\n", job.ID, t.api.base, rec.BaseModel, describeHyper(job))
	return nil
}

// ours reports whether a job the service lists is the one rec's intent created: its
// metadata names the intent, or, from a service that keeps no metadata, it trains rec's
// file with rec's model and no record of this run names it.
func (t *trainer) ours(rec *pipeline.TrainingJob, j Job) bool {
	if t.check(rec, j) != nil {
		return false
	}
	if j.Metadata != nil && j.Metadata[metaIntent] != "" {
		return j.Metadata[metaIntent] == rec.Intent
	}
	for _, r := range t.m.Training {
		if r.JobID == j.ID {
			return false
		}
	}
	return true
}

// check refuses a job that does not train rec's file with rec's model: whatever the
// service answers, such a job is not this run's.
func (t *trainer) check(rec *pipeline.TrainingJob, j Job) error {
	if j.TrainingFile != "" && j.TrainingFile != rec.Files[0].FileID {
		return fmt.Errorf("the service reports fine-tuning job %s as training file %s, not this run's %s: not accepted as this run's job", j.ID, j.TrainingFile, rec.Files[0].FileID)
	}
	if j.Model != "" && j.Model != rec.BaseModel && !strings.HasPrefix(j.Model, rec.BaseModel+"-") {
		return fmt.Errorf("the service reports fine-tuning job %s as training model %s, not %s: not accepted as this run's job", j.ID, j.Model, rec.BaseModel)
	}
	return nil
}

// absent reports an error answer that means the service has no such list endpoint.
func absent(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed || ae.Status == http.StatusNotImplemented)
}

// uploadName is the file name an upload carries: the run, format, split and the start of
// the bytes' hash, so that a resumed run recognises its own upload in the service's list.
func uploadName(run, format, split, sum string) string {
	return fmt.Sprintf("reactgen-%s-%s.%s-%.12s.jsonl", run, format, split, sum)
}

func newIntent() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// uploaded returns the file id of an earlier upload of the same bytes to the same service.
func (t *trainer) uploaded(sum string) string {
	for _, j := range t.m.Training {
		for _, f := range j.Files {
			if f.SHA256 == sum && f.FileID != "" && j.BaseURL == redact.URL(t.api.base) {
				return f.FileID
			}
		}
	}
	return ""
}

// maxPollFailures is how many status checks in a row may fail (network, 5xx) before
// following gives up; the job runs on and a re-run attaches again.
const maxPollFailures = 6

// follow polls the job until it ends, printing its new events and recording each status.
func (t *trainer) follow(ctx context.Context, rec *pipeline.TrainingJob) (pipeline.TrainingJob, error) {
	seen := map[string]bool{}
	failures := 0
	for {
		job, err := t.api.Get(ctx, rec.JobID)
		if err == nil {
			if cerr := t.check(rec, job); cerr != nil {
				return *rec, cerr
			}
			var evs []Event
			evs, err = t.api.Events(ctx, rec.JobID, 50)
			for _, e := range evs {
				k := fmt.Sprintf("%d\x00%s\x00%s", e.Created.Unix(), e.Level, e.Message)
				if !seen[k] {
					seen[k] = true
					fmt.Fprintf(t.o.Progress, "%s %s %s\n", e.Created.Format(time.RFC3339), e.Level, e.Message)
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return t.interrupted(rec, ctx.Err())
			}
			var ae *APIError
			if errors.As(err, &ae) && !ae.Transient() {
				return *rec, err
			}
			failures++
			t.o.Logger.Warn("checking the fine-tuning job failed; trying again", "job", rec.JobID, "err", err, "failures", failures)
			if failures >= maxPollFailures {
				return *rec, fmt.Errorf("stopped following job %s after %d failed checks (it runs on; run again to attach): %w", rec.JobID, failures, err)
			}
		} else {
			failures = 0
			if job.Status != rec.Status || job.FineTunedModel != rec.FineTunedModel {
				fmt.Fprintf(t.o.Progress, "job %s: %s\n", rec.JobID, job.Status)
				rec.Status, rec.FineTunedModel, rec.TrainedTokens, rec.Finished = job.Status, job.FineTunedModel, job.TrainedTokens, job.Finished
				if job.Error != "" {
					rec.Error = job.Error
				}
				if err := t.save(rec); err != nil {
					return *rec, err
				}
			}
			if pipeline.JobDone(job.Status) {
				break
			}
		}
		if err := retry.Sleep(ctx, t.o.PollInterval); err != nil {
			return t.interrupted(rec, err)
		}
	}
	if rec.Status != pipeline.JobSucceeded {
		if rec.Error == "" {
			rec.Error = lastError(ctx, t, rec.JobID)
			_ = t.save(rec)
		}
		return *rec, fmt.Errorf("%w: job %s ended %s: %s", ErrJobFailed, rec.JobID, rec.Status, orNone(rec.Error))
	}
	if rec.FineTunedModel == "" {
		return *rec, fmt.Errorf("job %s succeeded but the service named no fine-tuned model", rec.JobID)
	}
	return *rec, nil
}

// interrupted records that following stopped; the job itself runs on.
func (t *trainer) interrupted(rec *pipeline.TrainingJob, err error) (pipeline.TrainingJob, error) {
	if serr := t.save(rec); serr != nil {
		err = errors.Join(err, serr)
	}
	fmt.Fprintf(t.o.Progress, "stopped following job %s (%s); it runs on, and `reactgen train` with the same settings attaches to it again\n", rec.JobID, rec.Status)
	return *rec, err
}

// lastError is the newest error-level event of a failed job, for services that put the
// reason there rather than in the job's error object.
func lastError(ctx context.Context, t *trainer, id string) string {
	evs, err := t.api.Events(ctx, id, 50)
	if err != nil {
		return ""
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Level == "error" {
			return evs[i].Message
		}
	}
	return ""
}

// exportFiles finds the export's files of the format for the train and validation splits
// of the react view, checks them against the manifest's hashes and reads them.
func (t *trainer) exportFiles() (string, []pipeline.TrainingFile, [][]byte, error) {
	formats := Formats
	if t.o.Format != "" {
		if !slices.Contains(Formats, t.o.Format) {
			return "", nil, nil, fmt.Errorf("--format %q: want one of %s", t.o.Format, strings.Join(Formats, ", "))
		}
		formats = []string{t.o.Format}
	}
	for _, format := range formats {
		var files []pipeline.TrainingFile
		var data [][]byte
		for _, split := range []string{"train", "validation"} {
			f, b, err := t.readSplit(format, split)
			if err != nil {
				return "", nil, nil, err
			}
			if f.Rows > 0 {
				files, data = append(files, f), append(data, b)
			} else if split == "train" {
				break
			}
		}
		if len(files) > 0 {
			return format, files, data, nil
		}
	}
	return "", nil, nil, fmt.Errorf("%s: the export holds no %s training file: run `reactgen export` with export.formats including openai-chat",
		t.o.Dir, strings.Join(formats, " or "))
}

// readSplit concatenates the react-view files of one format and split, in shard order.
func (t *trainer) readSplit(format, split string) (pipeline.TrainingFile, []byte, error) {
	f := pipeline.TrainingFile{Split: split}
	var buf bytes.Buffer
	for _, out := range t.m.Outputs {
		if out.Stage != "export" || out.Format != format || out.Split != split {
			continue
		}
		base := path.Base(out.Path)
		rest, ok := strings.CutPrefix(base, format+"."+split)
		if !ok || (rest != "" && rest[0] != '.' && rest[0] != '-') {
			continue // another view (format.act.train...) or a longer name
		}
		if strings.HasSuffix(base, ".gz") || strings.HasSuffix(base, ".zst") {
			return f, nil, fmt.Errorf("%s is compressed: fine-tuning services take plain JSONL; export again with export.compression none", out.Path)
		}
		b, err := safefile.ReadIn(t.o.Dir, filepath.FromSlash(out.Path), MaxUploadBytes)
		if err != nil {
			return f, nil, fmt.Errorf("read export file: %w", err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != out.SHA256 {
			return f, nil, fmt.Errorf("%s changed since the export wrote it (sha256 differs from the manifest): run `reactgen export` again", out.Path)
		}
		buf.Write(b)
		f.Paths = append(f.Paths, out.Path)
		f.Rows += out.Rows
	}
	// What is uploaded: the rows without their reasoning_content (ForUpload).
	b, err := ForUpload(buf.Bytes())
	if err != nil {
		return f, nil, fmt.Errorf("%s %s files %v: %w", format, split, f.Paths, err)
	}
	sum := sha256.Sum256(b)
	f.Bytes, f.SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
	return f, b, nil
}

// EpochsForSteps converts a number of optimizer steps at a batch size into whole epochs
// over rows examples (at least 1), for services that take epochs only.
func EpochsForSteps(steps, batch, rows int) int {
	if rows <= 0 {
		return 1
	}
	return max(1, (steps*batch+rows-1)/rows)
}

// EvalCommand is the `reactgen eval` command that scores a fine-tuned model zero-shot in
// the layout it was trained on.
func EvalCommand(run string, rec pipeline.TrainingJob) string {
	config := "CONFIG.yaml"
	if m, err := pipeline.ReadManifest(run); err == nil && m.ConfigFile != "" {
		if _, err := os.Stat(m.ConfigFile); err == nil {
			config = m.ConfigFile
		}
	}
	out := filepath.Join(filepath.Dir(filepath.Clean(run)), filepath.Base(run)+"-eval")
	format := "chat"
	if strings.HasSuffix(rec.Format, "-tools") {
		format = "tools" // a model trained on tool calls is asked with them
	}
	// The model's name comes from the service and the paths from the disk: each word is
	// quoted for a POSIX shell, so that a name holding $(...), a quote or a space pasted
	// from the terminal runs nothing and stays one argument.
	return "reactgen eval --config " + ShellQuote(config) + " --out " + ShellQuote(out) +
		" --set " + ShellQuote("llm.base_url="+rec.BaseURL) + " --set " + ShellQuote("llm.model="+rec.FineTunedModel) +
		" --set " + ShellQuote("generate.format="+format) + " --set generate.prompting=trained --set " +
		ShellQuote("generate.trained_format="+rec.Format) + " --set task.path=EVAL_SPLIT"
}

// ShellQuote is s as one word of a POSIX shell command line: as it is when it holds only
// characters no shell treats specially, otherwise in single quotes (a single quote
// inside written '\”).
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
