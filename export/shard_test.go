package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

// TestOutFileWritesWhatItCounts writes writes of every size across several buffers (on
// Linux through direct I/O where the test's file system takes it) and reads the file
// back, whole and through directReader: the bytes, the size and the sha256 close reports
// are those written.
func TestOutFileWritesWhatItCounts(t *testing.T) {
	for _, total := range []int{0, 1, 4095, 4096, outBuffer - 1, outBuffer, outBuffer + 1, 3*outBuffer + 12345} {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		o, err := createOut(path)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		for i, size := 0, 1; want.Len() < total; i, size = i+1, size*3%(outBuffer+7)+1 {
			p := make([]byte, min(size, total-want.Len()))
			for j := range p {
				p[j] = byte(i + j)
			}
			want.Write(p)
			if n, err := o.Write(p); err != nil || n != len(p) {
				t.Fatalf("total %d: Write(%d bytes) = %d, %v", total, len(p), n, err)
			}
		}
		size, sum, err := o.close()
		if err != nil {
			t.Fatalf("total %d: close: %v", total, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := io.ReadAll(iotest.OneByteReader(newDirectReader(f)))
		f.Close()
		if err != nil || !bytes.Equal(direct, want.Bytes()) {
			t.Errorf("total %d: directReader read %d bytes (equal: %v), %v", total, len(direct), bytes.Equal(direct, want.Bytes()), err)
		}
		h := sha256.Sum256(want.Bytes())
		if !bytes.Equal(got, want.Bytes()) || size != int64(total) || sum != hex.EncodeToString(h[:]) {
			t.Errorf("total %d: read back %d bytes (equal: %v), close said %d bytes, sha256 %s, want %s",
				total, len(got), bytes.Equal(got, want.Bytes()), size, sum, hex.EncodeToString(h[:]))
		}
	}
}

// TestOutFileFallsBackFromDirectIO gives an outFile opened for direct I/O a buffer one
// byte out of alignment, which direct I/O refuses (EINVAL): the writes go through the
// page cache instead and the file is whole.
func TestOutFileFallsBackFromDirectIO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	o, err := createOut(path)
	if err != nil {
		t.Fatal(err)
	}
	if !o.direct {
		o.close()
		t.Skip("the test's file system takes no direct I/O")
	}
	b := make([]byte, outBuffer+1)
	o.buf = b[1:1:len(b)]
	want := bytes.Repeat([]byte("0123456789abcdef"), 3*outBuffer/16+5)
	if n, err := o.Write(want); err != nil || n != len(want) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	fellBack := !o.direct
	size, _, err := o.close()
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || size != int64(len(want)) {
		t.Errorf("read back %d bytes (equal: %v), close said %d; want %d", len(got), bytes.Equal(got, want), size, len(want))
	}
	if !fellBack {
		t.Log("this file system took the unaligned buffer for direct I/O; the fallback was not exercised")
	}
}
