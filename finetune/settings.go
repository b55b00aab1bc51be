package finetune

import (
	"fmt"
	"strings"

	"github.com/reactgen/reactgen/pipeline"
)

// A run's fine-tuning job is made once: a later `reactgen train` attaches to it when the
// settings it asks for are those the job was made with, and otherwise names what differs.

func sameSettings(a, b pipeline.TrainingJob) bool { return len(diffSettings(a, b)) == 0 }

// diffSettings lists the settings in which a recorded job differs from the one asked for.
func diffSettings(was, now pipeline.TrainingJob) []pipeline.Mismatch {
	var out []pipeline.Mismatch
	add := func(k, a, b string) {
		if a != b {
			out = append(out, pipeline.Mismatch{Key: k, Was: a, Now: b})
		}
	}
	add("base_url", was.BaseURL, now.BaseURL)
	add("base_model", was.BaseModel, now.BaseModel)
	add("format", was.Format, now.Format)
	add("suffix", was.Suffix, now.Suffix)
	add("hyperparameters", fmt.Sprintf("%+v", was.Hyperparameters), fmt.Sprintf("%+v", now.Hyperparameters))
	sums := func(j pipeline.TrainingJob) string {
		var s []string
		for _, f := range j.Files {
			s = append(s, f.Split+":"+f.SHA256)
		}
		return strings.Join(s, ",")
	}
	add("files", sums(was), sums(now))
	return out
}

// SettingsError says that the run's fine-tuning job was made with other settings.
type SettingsError struct {
	Dir  string
	Job  pipeline.TrainingJob
	Diff []pipeline.Mismatch
}

func (e *SettingsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s already has fine-tuning job %s (%s) made with other settings:", e.Dir, orNone(e.Job.JobID), e.Job.Status)
	for _, d := range e.Diff {
		fmt.Fprintf(&b, "\n  %s: was %q, now %q", d.Key, d.Was, d.Now)
	}
	b.WriteString("\npass --new-job to start another job, or the same settings to attach to it")
	return b.String()
}

func describeHyper(j Job) string {
	return fmt.Sprintf("epochs %v, batch size %v", orAuto(j.Epochs), orAuto(j.BatchSize))
}

func orAuto(v any) any {
	if v == nil {
		return "auto"
	}
	return v
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
