package export

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/reactgen/reactgen/internal/fastjson"

	"github.com/reactgen/reactgen/pipeline"
)

// Exporter writes examples to one format's files. Write is called from one goroutine at a
// time and may keep nothing of ex after it returns; Close finishes every file and must be
// called once, after which the exporter's files stand under their final names in the
// directory it was given (a staging directory, in Run).
type Exporter interface {
	Write(ctx context.Context, ex Example) error
	Close() error
}

// fileExporter is an Exporter that can list what it wrote.
type fileExporter interface {
	Exporter
	// Files lists the files written; valid after a successful Close.
	Files() []File
}

var (
	_ Exporter = (*JSONL)(nil)
	_ Exporter = (*ArrowDataset)(nil)
	_ Exporter = (*ArrowFile)(nil)
	_ Exporter = (*Parquet)(nil)
)

// viewSuffix is the file name infix of a view: none for react, ".act", ".standard".
func viewSuffix(view string) string {
	if view == ViewReAct || view == "" {
		return ""
	}
	return "." + view
}

// jsonlExt is the file extension for a compression.
func jsonlExt(compression string) (string, error) {
	switch compression {
	case "", "none":
		return ".jsonl", nil
	case "gzip":
		return ".jsonl.gz", nil
	case "zstd":
		return ".jsonl.zst", nil
	}
	return "", &pipeline.ConfigError{Key: "export.compression", Message: fmt.Sprintf("%q is not one of none, zstd, gzip", compression)}
}

// JSONL writes one JSONL training format: <format>[.<view>].<split>.jsonl[.gz|.zst], or
// with sharding <format>[.<view>].<split>-0000i-of-0000N.jsonl[...].
type JSONL struct {
	set   shardSet
	files []File
}

// NewJSONL returns the exporter of a JSONL format (openai-chat, axolotl-chat, completion,
// alpaca, sharegpt, agentgym) writing under dir.
func NewJSONL(dir, format, view string, cfg pipeline.ExportConfig) (*JSONL, error) {
	line, ok := jsonlFormats[format]
	if !ok {
		return nil, &pipeline.ConfigError{Key: "export.formats", Message: fmt.Sprintf("%q is not a JSONL format", format)}
	}
	ext, err := jsonlExt(cfg.Compression)
	if err != nil {
		return nil, err
	}
	o := lineOptions{System: cfg.System, Weights: cfg.Weights, ObservationRole: cfg.ObservationRole, TrainObservations: cfg.TrainObservations,
		Reasoning: cfg.Reasoning}
	sharded := cfg.ShardRows > 0 || cfg.ShardBytes > 0
	e := &JSONL{set: shardSet{
		stage: dir, format: format, view: view, maxRows: cfg.ShardRows, maxBytes: cfg.ShardBytes,
		newEnc: func(w io.Writer) (encoder, error) {
			return newJSONLEncoder(w, cfg.Compression, line, rowAppenders[format], o)
		},
		name: func(split string, i, n int) string {
			base := format + viewSuffix(view) + "." + split
			if sharded {
				base += "-" + shardName(i, n)
			}
			return base + ext
		},
	}}
	return e, nil
}

// Write appends ex to its split's file.
func (e *JSONL) Write(ctx context.Context, ex Example) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.set.write(&ex, ex.Split)
}

// Close finishes the files; a run with no rows still gets an empty train file.
func (e *JSONL) Close() error {
	if err := e.set.ensure("train"); err != nil {
		return err
	}
	files, err := e.set.close()
	e.files = files
	return err
}

// Files lists the files written.
func (e *JSONL) Files() []File { return e.files }

// jsonlEncoder writes rows as JSON lines, optionally compressed: appended by the
// format's rowAppender where it has one, else encoded from line's structs.
type jsonlEncoder struct {
	w    io.Writer
	zc   io.WriteCloser // the compressor, nil for none
	line lineFormat
	rows rowAppender // nil: every row is encoded from line's structs
	rw   *rowWriter
	o    lineOptions
	row  []byte // rows appends here
	buf  bytes.Buffer
	enc  *fastjson.Encoder
}

func newJSONLEncoder(w io.Writer, compression string, line lineFormat, rows rowAppender, o lineOptions) (*jsonlEncoder, error) {
	e := &jsonlEncoder{w: w, line: line, rows: rows, rw: newRowWriter(o), o: o}
	e.buf.Grow(16 << 10)
	e.enc = fastjson.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	switch compression {
	case "gzip":
		zw, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
		if err != nil {
			return nil, err
		}
		e.w, e.zc = zw, zw
	case "zstd":
		zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		e.w, e.zc = zw, zw
	}
	return e, nil
}

// write writes the rows of ex in the encoder's format and returns how many it wrote and
// their bytes, newlines included, before compression. An example with no trained step
// (completion and alpaca) writes none.
func (e *jsonlEncoder) write(ex *Example) (int, int64, error) {
	if e.rows != nil {
		e.rw.start(ex)
		row, n, ok := e.rows(e.rw, e.row[:0])
		e.row = row
		if ok {
			if n == 0 {
				return 0, 0, nil
			}
			_, err := e.w.Write(row)
			return n, int64(len(row)), err
		}
	}
	e.buf.Reset()
	rows := e.line(ex, e.o)
	for _, row := range rows {
		if err := e.enc.Encode(row); err != nil {
			return 0, 0, err
		}
	}
	if e.buf.Len() == 0 {
		return 0, 0, nil
	}
	_, err := e.w.Write(e.buf.Bytes())
	return len(rows), int64(e.buf.Len()), err
}

// writeRow writes row as one JSON line.
func (e *jsonlEncoder) writeRow(row any) (int64, error) {
	e.buf.Reset()
	if err := e.enc.Encode(row); err != nil {
		return 0, err
	}
	_, err := e.w.Write(e.buf.Bytes())
	return int64(e.buf.Len()), err
}

func (e *jsonlEncoder) finish() error {
	if e.zc != nil {
		return e.zc.Close()
	}
	return nil
}
