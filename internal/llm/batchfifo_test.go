package llm

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/safefile"
)

// A vllm run-batch output file that is a named pipe (or a link to /dev/zero) is refused
// without blocking: opening a pipe for reading waits for a writer, where no signal could
// stop the run, and the wave fails naming the file instead of being polled forever.
func TestWaveFilesRefuseAPipeForOutput(t *testing.T) {
	for name, plant := range map[string]func(string) error{
		"pipe":              func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "wave-00001.input.jsonl")
			if err := os.WriteFile(in, []byte(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			w := &waveFiles{}
			_, out, err := w.Submit(t.Context(), in, batchChat, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := plant(out); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 2)
			go func() {
				_, err := w.Status(t.Context(), out)
				done <- err
				_, _, err = w.Output(t.Context(), out, batchStatus{})
				done <- err
			}()
			for _, what := range []string{"status", "output"} {
				select {
				case err := <-done:
					var nr *safefile.NotRegularError
					var esc *safefile.EscapeError
					if !errors.As(err, &nr) && !errors.As(err, &esc) {
						t.Errorf("%s of a %s: %v, want it refused", what, name, err)
					}
					if IsRetryable(err) {
						t.Errorf("%s of a %s: %v is retried", what, name, err)
					}
				case <-time.After(time.Minute):
					t.Fatalf("%s of a %s still blocked after a minute", what, name)
				}
			}
		})
	}
}
