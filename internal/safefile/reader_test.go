package safefile_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/reactgen/reactgen/internal/safefile"
)

func TestReaderReadsWhatRHolds(t *testing.T) {
	want := strings.Repeat("Search[Ada]\n", 10000)
	got, err := io.ReadAll(safefile.Reader(t.Context(), iotest.HalfReader(strings.NewReader(want))))
	if err != nil || string(got) != want {
		t.Fatalf("read %d bytes, %v; want %d", len(got), err, len(want))
	}
	if err := iotest.TestReader(safefile.Reader(t.Context(), strings.NewReader(want)), []byte(want)); err != nil {
		t.Error(err)
	}
}

// A read blocked on a pipe nobody writes to returns when the context is cancelled.
func TestReaderIsInterruptedByCancel(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	defer pr.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(safefile.Reader(ctx, pr))
		done <- err
	}()
	pw.Write([]byte("Search[Ada]\n")) // some bytes, then nothing more
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v, want context.Canceled", err)
	}
}
