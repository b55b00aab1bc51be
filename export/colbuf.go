package export

import (
	"fmt"
	"math/bits"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// colBuf is one column of a record batch being built, held in Go slices that finish
// hands to Arrow as they are: a string column's offsets and bytes, a list's offsets and
// its elements' column, a struct's field columns, a primitive column's values. It stands
// in for arrow's builders, which zero every buffer they grow into (after the runtime
// already did) and check and count each value through three buffers; the arrays it
// makes have the same buffers, but for the validity bitmaps of columns without nulls,
// which neither Arrow IPC nor Parquet writes (TestColBufWritesBuilderBytes).
type colBuf struct {
	typ      arrow.DataType
	n        int       // values appended
	offsets  []int32   // string and list: n+1 offsets from 0
	bytes    []byte    // string: the values' bytes; bool: the bits
	f64      []float64 // float64 values (0 for a null)
	i64      []int64
	valid    []byte // validity bits, once a null came; nil while there was none
	nulls    int
	children []*colBuf // list: the elements; struct: the fields
	// reserved: a string column's last batch had bytes. arrow's builder, which this
	// batch's files are held to, then had a values buffer reserved for this one, and a
	// batch of empty strings had a buffer without bytes, not none; Parquet writes the
	// minimum and maximum of the first and none of the second.
	reserved bool
}

func newColBuf(dt arrow.DataType) *colBuf {
	c := &colBuf{typ: dt}
	switch t := dt.(type) {
	case *arrow.ListType:
		c.children = []*colBuf{newColBuf(t.Elem())}
	case *arrow.StructType:
		for _, f := range t.Fields() {
			c.children = append(c.children, newColBuf(f.Type))
		}
	case *arrow.StringType, *arrow.BooleanType, *arrow.Float64Type, *arrow.Int64Type:
	default:
		panic("export: no column buffer for " + dt.String()) // the schema is constant
	}
	c.reset(0, 0)
	return c
}

// reset starts a new batch with room for about n values and nbytes bytes, the sizes of
// the last one, so that the slices are allocated once instead of doubled a dozen times.
func (c *colBuf) reset(n, nbytes int) {
	n += n / 8
	c.n, c.nulls, c.valid = 0, 0, nil
	switch c.typ.ID() {
	case arrow.STRING:
		c.offsets = append(make([]int32, 0, n+1), 0)
		c.bytes = make([]byte, 0, nbytes+nbytes/8)
		c.reserved = nbytes > 0
	case arrow.LIST:
		c.offsets = append(make([]int32, 0, n+1), 0)
	case arrow.BOOL:
		c.bytes = make([]byte, 0, (n+7)/8)
	case arrow.FLOAT64:
		c.f64 = make([]float64, 0, n)
	case arrow.INT64:
		c.i64 = make([]int64, 0, n)
	}
}

func (c *colBuf) str(s string) {
	c.bytes = append(c.bytes, s...)
	c.offsets = append(c.offsets, int32(len(c.bytes)))
	c.n++
}

func (c *colBuf) boolean(v bool) {
	c.bytes = appendBit(c.bytes, c.n, v)
	c.n++
}

func (c *colBuf) float(v float64) {
	if c.valid != nil {
		c.markValid(true)
	}
	c.f64 = append(c.f64, v)
	c.n++
}

func (c *colBuf) floatNull() {
	if c.valid == nil { // the values so far were all valid
		c.valid = make([]byte, (c.n+7)/8, cap(c.f64)/8+1)
		for i := range c.n {
			c.valid[i/8] |= 1 << (i % 8)
		}
	}
	c.markValid(false)
	c.f64 = append(c.f64, 0)
	c.nulls++
	c.n++
}

func (c *colBuf) markValid(v bool) { c.valid = appendBit(c.valid, c.n, v) }

// appendBit sets bit n of an Arrow bitmap (least significant bit first) to v, adding a
// byte when n starts one; the bitmap holds n bits before the call.
func appendBit(bitmap []byte, n int, v bool) []byte {
	if n%8 == 0 {
		bitmap = append(bitmap, 0)
	}
	if v {
		bitmap[n/8] |= 1 << (n % 8)
	}
	return bitmap
}

func (c *colBuf) integer(v int64) {
	c.i64 = append(c.i64, v)
	c.n++
}

// floats and ints append a list of values to a list column.
func (c *colBuf) floats(v []float64) {
	e := c.children[0]
	e.f64 = append(e.f64, v...)
	e.n += len(v)
	c.endList()
}

func (c *colBuf) ints(v []int64) {
	e := c.children[0]
	e.i64 = append(e.i64, v...)
	e.n += len(v)
	c.endList()
}

// endList ends a list column's value after its elements were appended to children[0].
func (c *colBuf) endList() {
	c.offsets = append(c.offsets, int32(c.children[0].n))
	c.n++
}

// structs returns a list column's element struct and its fields.
func (c *colBuf) structs() (*colBuf, []*colBuf) {
	st := c.children[0]
	return st, st.children
}

// finish returns the values appended as Arrow array data (the caller releases it) and
// starts the next batch.
func (c *colBuf) finish() arrow.ArrayData {
	var bufs []*memory.Buffer
	var children []arrow.ArrayData
	var validity *memory.Buffer
	if c.nulls > 0 {
		validity = memory.NewBufferBytes(builderBitmap(c.valid, c.n))
	}
	size := 0 // the bytes of a string column
	switch c.typ.ID() {
	case arrow.STRING:
		size = len(c.bytes)
		values := c.bytes
		if size == 0 && !c.reserved {
			values = nil
		}
		bufs = []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.offsets)), memory.NewBufferBytes(values)}
	case arrow.LIST:
		bufs = []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.offsets))}
	case arrow.STRUCT:
		bufs = []*memory.Buffer{nil}
	case arrow.BOOL:
		bufs = []*memory.Buffer{nil, memory.NewBufferBytes(c.bytes)}
	case arrow.FLOAT64:
		bufs = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(c.f64))}
	case arrow.INT64:
		bufs = []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(c.i64))}
	}
	for _, ch := range c.children {
		d := ch.finish()
		defer d.Release()
		children = append(children, d)
	}
	if c.nulls > 0 && c.typ.ID() != arrow.FLOAT64 {
		panic(fmt.Sprintf("export: nulls in a %s column", c.typ)) // only reward has them
	}
	data := array.NewData(c.typ, c.n, bufs, children, c.nulls, 0)
	c.reset(c.n, size)
	return data
}

// builderBitmap returns the validity bits of n values in a buffer as long as arrow's
// builder made it: a bit per value of its capacity, which grows from 32 by doubling.
// Arrow IPC writes the bitmap of a column with nulls at that length.
func builderBitmap(valid []byte, n int) []byte {
	capacity := max(32, 1<<bits.Len(uint(n-1)))
	out := make([]byte, capacity/8)
	copy(out, valid)
	return out
}
