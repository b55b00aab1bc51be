package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/reactgen/reactgen/pipeline"
)

// batchRows is the record batch size of the Arrow and Parquet writers: rows are streamed
// in batches of this many, never held all at once.
const batchRows = 1000

// batchBuilder builds record batches of the shared schema, one colBuf per column, each
// batch's buffers presized from the previous one's.
type batchBuilder struct {
	schema *arrow.Schema
	cols   []*colBuf
	rows   int
}

func newBatchBuilder(schema *arrow.Schema) *batchBuilder {
	bb := &batchBuilder{schema: schema, cols: make([]*colBuf, len(columns))}
	for i, c := range columns {
		bb.cols[i] = newColBuf(c.typ)
	}
	return bb
}

// add appends ex's row and returns its size for export.shard_bytes.
func (bb *batchBuilder) add(ex *Example) int64 {
	for i, c := range columns {
		c.put(bb.cols[i], ex)
	}
	bb.rows++
	return rowSize(ex)
}

// record returns the rows added so far as a record (the caller releases it) and starts
// the next batch.
func (bb *batchBuilder) record() arrow.Record {
	arrs := make([]arrow.Array, len(bb.cols))
	for i, c := range bb.cols {
		data := c.finish()
		arrs[i] = array.MakeFromData(data)
		data.Release()
	}
	rec := array.NewRecord(bb.schema, arrs, int64(bb.rows))
	for _, a := range arrs {
		a.Release()
	}
	bb.rows = 0
	return rec
}

// batchEncoder writes record batches into one shard: batches it builds itself from
// examples (write), or batches built once and shared with other formats (writeRecord).
type batchEncoder struct {
	schema *arrow.Schema
	bb     *batchBuilder // built on the first write
	flush  func(rec arrow.Record) error
	done   func() error
}

func newBatchEncoder(schema *arrow.Schema, flush func(arrow.Record) error, done func() error) *batchEncoder {
	return &batchEncoder{schema: schema, flush: flush, done: done}
}

func (e *batchEncoder) write(ex *Example) (int, int64, error) {
	if e.bb == nil {
		e.bb = newBatchBuilder(e.schema)
	}
	n := e.bb.add(ex)
	if e.bb.rows >= batchRows {
		if err := e.emit(); err != nil {
			return 0, 0, err
		}
	}
	return 1, n, nil
}

func (e *batchEncoder) emit() error {
	rec := e.bb.record()
	defer rec.Release()
	return e.flush(rec)
}

// writeRecord writes a batch built elsewhere.
func (e *batchEncoder) writeRecord(rec arrow.Record) error { return e.flush(rec) }

func (e *batchEncoder) finish() error {
	if e.bb != nil {
		if e.bb.rows > 0 {
			if err := e.emit(); err != nil {
				return err
			}
		}
	}
	return e.done()
}

// sharedBatches feeds the arrow and parquet exporters of one view from one set of record
// batches: both write the same rows per split, in batches of batchRows that end where a
// shard ends (they shard alike), so building each batch once halves the building.
// Write and Close are called from one goroutine, which builds each batch and writes it
// to the arrow shards; the Parquet shards, the costliest output (encoding and zstd), are
// written by a goroutine of their own that receives the same batches in the same order.
type sharedBatches struct {
	sets     []*shardSet    // the exporters' shard sets, in the order batches go to them
	exps     []fileExporter // the exporters, for Close and Files
	schema   *arrow.Schema
	maxRows  int
	maxBytes int64
	splits   map[string]*splitBatch
	order    []string
	// The last set's writer: batches to write, and its error once it stops.
	queue chan sharedRecord
	done  chan error
}

// sharedRecord is a batch handed to the last set's writer, which releases it.
type sharedRecord struct {
	rec   arrow.Record
	split string
	rows  int
	n     int64
}

// splitBatch is the batch being built for one split, its bytes, and the rows and bytes
// of the current shard, counted as shardSet counts them.
type splitBatch struct {
	bb         *batchBuilder
	bytes      int64
	shardRows  int
	shardBytes int64
}

func newSharedBatches(cfg pipeline.ExportConfig, arrowDS *ArrowDataset, pq *Parquet) *sharedBatches {
	s := &sharedBatches{
		sets: []*shardSet{&arrowDS.set, &pq.set}, exps: []fileExporter{arrowDS, pq}, schema: Schema(),
		maxRows: cfg.ShardRows, maxBytes: cfg.ShardBytes, splits: map[string]*splitBatch{},
		queue: make(chan sharedRecord, 2), done: make(chan error, 1),
	}
	last := s.sets[len(s.sets)-1]
	go func() {
		var err error
		for r := range s.queue {
			if err == nil {
				err = last.writeRecord(r.rec, r.split, r.rows, r.n)
			}
			r.rec.Release()
		}
		s.done <- err
	}()
	return s
}

// Write adds ex to its split's batch, handing the batch to every exporter once it is
// full or its shard is.
func (s *sharedBatches) Write(ctx context.Context, ex Example) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sb := s.splits[ex.Split]
	if sb == nil {
		sb = &splitBatch{bb: newBatchBuilder(s.schema)}
		s.splits[ex.Split] = sb
		s.order = append(s.order, ex.Split)
	}
	n := sb.bb.add(&ex)
	sb.bytes += n
	sb.shardRows++
	sb.shardBytes += n
	shardFull := (s.maxRows > 0 && sb.shardRows >= s.maxRows) || (s.maxBytes > 0 && sb.shardBytes >= s.maxBytes)
	if sb.bb.rows >= batchRows || shardFull {
		if err := s.flush(ex.Split, sb); err != nil {
			return fmt.Errorf("write example %s: %w", ex.ID, err)
		}
	}
	if shardFull {
		sb.shardRows, sb.shardBytes = 0, 0
	}
	return nil
}

func (s *sharedBatches) flush(split string, sb *splitBatch) error {
	rows, n := sb.bb.rows, sb.bytes
	rec := sb.bb.record()
	defer rec.Release()
	sb.bytes = 0
	rec.Retain()
	s.queue <- sharedRecord{rec: rec, split: split, rows: rows, n: n}
	for _, set := range s.sets[:len(s.sets)-1] {
		if err := set.writeRecord(rec, split, rows, n); err != nil {
			return err
		}
	}
	return nil
}

// Close flushes the partial batches, waits for the Parquet writer and closes both
// exporters.
func (s *sharedBatches) Close() error {
	var errs []error
	for _, split := range s.order {
		sb := s.splits[split]
		if sb.bb.rows > 0 {
			if err := s.flush(split, sb); err != nil {
				errs = append(errs, err)
			}
		}
	}
	close(s.queue)
	if err := <-s.done; err != nil {
		errs = append(errs, err)
	}
	for _, e := range s.exps {
		if err := e.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ArrowDataset writes the directory Hugging Face datasets' save_to_disk writes for a
// DatasetDict, so load_from_disk reads it: arrow[.<view>]/dataset_dict.json and per split
// <split>/data-0000i-of-0000N.arrow (Arrow IPC stream files), dataset_info.json and
// state.json.
type ArrowDataset struct {
	dir   string
	root  string // arrow[.<view>], relative to dir
	set   shardSet
	files []File
}

// NewArrowDataset returns the exporter of the arrow format writing under dir.
func NewArrowDataset(dir, view string, cfg pipeline.ExportConfig) *ArrowDataset {
	schema := Schema()
	root := "arrow" + viewSuffix(view)
	return &ArrowDataset{dir: dir, root: root, set: shardSet{
		stage: dir, format: "arrow", view: view, maxRows: cfg.ShardRows, maxBytes: cfg.ShardBytes,
		newEnc: func(w io.Writer) (encoder, error) {
			iw := ipc.NewWriter(w, ipc.WithSchema(schema))
			return newBatchEncoder(schema, iw.Write, iw.Close), nil
		},
		name: func(split string, i, n int) string {
			return root + "/" + split + "/data-" + shardName(i, n) + ".arrow"
		},
	}}
}

// Write appends ex to its split.
func (e *ArrowDataset) Write(ctx context.Context, ex Example) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.set.write(&ex, ex.Split)
}

// Close finishes the shards and writes the dataset's JSON files.
func (e *ArrowDataset) Close() error {
	if err := e.set.ensure("train"); err != nil {
		return err
	}
	files, err := e.set.close()
	if err != nil {
		return err
	}
	e.files = files
	meta := func(rel string, v any, split string) error {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", rel, err)
		}
		size, sum, err := writeWhole(filepath.Join(e.dir, filepath.FromSlash(rel)), data)
		if err != nil {
			return err
		}
		e.files = append(e.files, File{Path: rel, Format: "arrow-meta", View: e.set.view, Split: split, Bytes: size, SHA256: sum})
		return nil
	}
	splits := slices.Clone(e.set.order)
	slices.SortFunc(splits, func(a, b string) int { // train first, then by name
		if (a == SplitTrain) != (b == SplitTrain) {
			if a == SplitTrain {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if err := meta(e.root+"/dataset_dict.json", map[string]any{"splits": splits}, ""); err != nil {
		return err
	}
	info := orderedObject{
		{"citation", ""}, {"description", "ReAct trajectories generated by reactgen"},
		{"features", hfFeatures()}, {"homepage", ""}, {"license", ""},
	}
	for _, split := range splits {
		var dataFiles []map[string]string
		h := sha256.New()
		for _, f := range files {
			if f.Split == split {
				dataFiles = append(dataFiles, map[string]string{"filename": filepath.Base(f.Path)})
				h.Write([]byte(f.SHA256))
			}
		}
		if err := meta(e.root+"/"+split+"/dataset_info.json", info, split); err != nil {
			return err
		}
		state := orderedObject{
			{"_data_files", dataFiles},
			{"_fingerprint", hex.EncodeToString(h.Sum(nil))[:16]},
			{"_format_columns", nil},
			{"_format_kwargs", map[string]any{}},
			{"_format_type", nil},
			{"_output_all_columns", false},
			{"_split", split},
		}
		if err := meta(e.root+"/"+split+"/state.json", state, split); err != nil {
			return err
		}
	}
	return nil
}

// Files lists the files written.
func (e *ArrowDataset) Files() []File { return e.files }

// ArrowFile writes every row, all splits, to one Arrow IPC file (the random-access
// format): dataset[.<view>].arrow, with a split column.
type ArrowFile struct {
	set   shardSet
	files []File
}

// NewArrowFile returns the exporter of the arrow-file format writing under dir.
func NewArrowFile(dir, view string) *ArrowFile {
	schema := Schema()
	return &ArrowFile{set: shardSet{
		stage: dir, format: "arrow-file", view: view,
		newEnc: func(w io.Writer) (encoder, error) {
			ws, ok := w.(io.WriteSeeker)
			if !ok {
				return nil, fmt.Errorf("arrow-file: writer cannot report its position")
			}
			fw, err := ipc.NewFileWriter(ws, ipc.WithSchema(schema))
			if err != nil {
				return nil, err
			}
			return newBatchEncoder(schema, fw.Write, fw.Close), nil
		},
		name: func(string, int, int) string { return "dataset" + viewSuffix(view) + ".arrow" },
	}}
}

// Write appends ex.
func (e *ArrowFile) Write(ctx context.Context, ex Example) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.set.write(&ex, "")
}

// Close finishes the file.
func (e *ArrowFile) Close() error {
	if err := e.set.ensure(""); err != nil {
		return err
	}
	files, err := e.set.close()
	e.files = files
	return err
}

// Files lists the files written.
func (e *ArrowFile) Files() []File { return e.files }

// Parquet writes zstd-compressed Parquet shards in the Hugging Face Hub's layout:
// data[/<view>]/<split>-0000i-of-0000N.parquet, one row group per record batch.
type Parquet struct {
	set   shardSet
	files []File
}

// NewParquet returns the exporter of the parquet format writing under dir.
func NewParquet(dir, view string, cfg pipeline.ExportConfig) *Parquet {
	installPooledZstd()
	schema := Schema()
	props := parquet.NewWriterProperties(parquetProps()...)
	prefix := "data/"
	if view != ViewReAct && view != "" {
		prefix = "data/" + view + "/"
	}
	return &Parquet{set: shardSet{
		stage: dir, format: "parquet", view: view, maxRows: cfg.ShardRows, maxBytes: cfg.ShardBytes,
		newEnc: func(w io.Writer) (encoder, error) {
			pw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
			if err != nil {
				return nil, err
			}
			return newBatchEncoder(schema, pw.Write, pw.Close), nil
		},
		name: func(split string, i, n int) string { return prefix + split + "-" + shardName(i, n) + ".parquet" },
	}}
}

// parquetProps: zstd everywhere, dictionaries only for the low-cardinality columns, and
// data pages v2: arrow v15 re-grows the level buffer of a v1 page on every RLE literal
// run, which made nested columns (steps, messages) quadratic. pyarrow, and so Hugging Face
// datasets, DuckDB and Polars read v2 pages, and so does hyparquet.
//
// The schema's root is REQUIRED, as parquet-cpp (pyarrow) and DuckDB write it: arrow v15
// marks it REPEATED by default, which readers that count every REPEATED element of a
// column's path as a repetition level (hyparquet) take for one level more than the file
// has, so they misread every column's levels (v1 pages: all 22 columns; v2 pages, whose
// levels stand apart: the boolean, dictionary and nested ones).
func parquetProps() []parquet.WriterProperty {
	p := []parquet.WriterProperty{
		parquet.WithRootRepetition(parquet.Repetitions.Required),
		parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithCompression(compress.Codecs.Zstd),
		// zstd level 1: twice as fast as the default level 3 on this text, a few per cent
		// larger; exports are written once per run and recompressed by nobody.
		parquet.WithCompressionLevel(1),
		parquet.WithDictionaryDefault(false),
	}
	for _, c := range []string{"task", "method", "policy", "run_id", "view", "split"} {
		p = append(p, parquet.WithDictionaryFor(c, true))
	}
	return p
}

// Write appends ex to its split.
func (e *Parquet) Write(ctx context.Context, ex Example) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.set.write(&ex, ex.Split)
}

// Close finishes the shards.
func (e *Parquet) Close() error {
	if err := e.set.ensure("train"); err != nil {
		return err
	}
	files, err := e.set.close()
	e.files = files
	return err
}

// Files lists the files written.
func (e *Parquet) Files() []File { return e.files }
