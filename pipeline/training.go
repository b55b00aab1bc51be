package pipeline

import "time"

// Fine-tuning job states, as OpenAI's fine-tuning API spells them.
const (
	JobValidating = "validating_files"
	JobQueued     = "queued"
	JobRunning    = "running"
	JobSucceeded  = "succeeded"
	JobFailed     = "failed"
	JobCancelled  = "cancelled"
)

// JobDone reports whether a fine-tuning job status is final.
func JobDone(status string) bool {
	return status == JobSucceeded || status == JobFailed || status == JobCancelled
}

// TrainingFile is one export file handed to a fine-tuning service: what was read (the
// run directory's files, concatenated when the split is sharded) and the id the service
// gave the upload.
type TrainingFile struct {
	Split  string   `json:"split"`
	Paths  []string `json:"paths"` // relative to the run directory
	Rows   int      `json:"rows"`
	Bytes  int64    `json:"bytes"`
	SHA256 string   `json:"sha256"` // of the uploaded bytes
	FileID string   `json:"file_id,omitempty"`
}

// Hyperparameters are a fine-tuning job's settings. Zero means the service's default.
type Hyperparameters struct {
	Epochs       int     `json:"n_epochs,omitempty"`
	Steps        int     `json:"steps,omitempty"` // asked for; the job gets Epochs derived from it
	BatchSize    int     `json:"batch_size,omitempty"`
	LRMultiplier float64 `json:"learning_rate_multiplier,omitempty"`
}

// TrainingJob is one fine-tuning job started from a run's export, as the manifest
// records it (`reactgen train`). It holds no secret: the API key stays in its variable.
type TrainingJob struct {
	Provider        string          `json:"provider"`
	BaseURL         string          `json:"base_url"`
	BaseModel       string          `json:"base_model"`
	Format          string          `json:"format"`
	Suffix          string          `json:"suffix,omitempty"`
	Hyperparameters Hyperparameters `json:"hyperparameters"`
	Files           []TrainingFile  `json:"files"`
	// Intent names this attempt to create a job; it is recorded before any upload and
	// sent as the job's metadata (reactgen_intent), so a run resumed after a kill finds
	// the job it may already have created instead of creating another.
	Intent string `json:"intent,omitempty"`
	JobID  string `json:"job_id,omitempty"`
	// Status is uploading, uploaded and creating until the job exists, then the service's.
	Status         string    `json:"status"`
	FineTunedModel string    `json:"fine_tuned_model,omitempty"`
	TrainedTokens  int       `json:"trained_tokens,omitempty"`
	Error          string    `json:"error,omitempty"`
	Created        time.Time `json:"created"`
	Updated        time.Time `json:"updated"`
	Finished       time.Time `json:"finished,omitzero"`
}
