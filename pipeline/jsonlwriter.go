package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/reactgen/reactgen/internal/atomicfile"
)

// JSONLWriter writes records to a file atomically: lines go to a temporary file that
// Commit renames into place, so a half-written file never stands under its final name.
type JSONLWriter struct {
	path string
	a    *atomicfile.File
	w    *bufio.Writer
	Rows int
}

// CreateJSONL starts an atomic JSONL file at path.
func CreateJSONL(path string) (*JSONLWriter, error) {
	a, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	return &JSONLWriter{path: path, a: a, w: a.Buffer()}, nil
}

// CreateHashedJSONL starts an atomic JSONL file at path that hashes its bytes as it
// writes them (atomicfile.CreateHashed), for Digest after Ready or Commit.
func CreateHashedJSONL(path string) (*JSONLWriter, error) {
	a, err := atomicfile.CreateHashed(path)
	if err != nil {
		return nil, err
	}
	return &JSONLWriter{path: path, a: a, w: a.Buffer()}, nil
}

// Write appends one record.
func (j *JSONLWriter) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record for %s: %w", j.path, err)
	}
	b = append(b, '\n')
	if _, err := j.w.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	j.Rows++
	return nil
}

// WriteLine appends one record that is already a JSON line, as read from another JSONL
// file (without its newline): the filter copies kept episodes this way instead of
// encoding them again.
func (j *JSONLWriter) WriteLine(line []byte) error {
	if _, err := j.w.Write(line); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	if err := j.w.WriteByte('\n'); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	j.Rows++
	return nil
}

// WriteRejected appends the Rejected record of the episode that line holds (a JSON
// object, as read from an episode file, without its newline): the line with "rejects"
// added as its last member. For a line json.Marshal wrote, these are the bytes that
// Write(Rejected{Episode: ep, Rejects: rejects}) writes.
func (j *JSONLWriter) WriteRejected(line []byte, rejects []Reject) error {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return fmt.Errorf("encode record for %s: not a JSON object", j.path)
	}
	rb, err := json.Marshal(rejects)
	if err != nil {
		return fmt.Errorf("encode record for %s: %w", j.path, err)
	}
	body := bytes.TrimSpace(line[1 : len(line)-1])
	j.w.Write(line[:len(line)-1])
	if len(body) > 0 {
		j.w.WriteByte(',')
	}
	j.w.WriteString(`"rejects":`)
	j.w.Write(rb)
	if _, err := j.w.WriteString("}\n"); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	j.Rows++
	return nil
}

// Commit syncs the file and renames it into place.
func (j *JSONLWriter) Commit() error { return j.a.Commit() }

// Ready syncs the file and leaves it under its temporary name, which it returns, for
// Run.Commit (atomicfile.File.Ready).
func (j *JSONLWriter) Ready() (string, error) { return j.a.Ready() }

// Digest is the size and sha256 of a CreateHashedJSONL file after Ready or Commit
// (atomicfile.File.Digest).
func (j *JSONLWriter) Digest() (int64, string, error) { return j.a.Digest() }

// Abort removes the temporary file; the final name is untouched.
func (j *JSONLWriter) Abort() { j.a.Abort() }
