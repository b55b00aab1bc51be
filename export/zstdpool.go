package export

import (
	"sync"
	_ "unsafe" // for go:linkname

	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// parquetCodecs is arrow v15's codec table. Its zstd codec builds a new zstd.Encoder for
// every data page it compresses (about 20 MB of tables and 40 ms each, measured), which
// made the Parquet writer twenty times slower than every other format together; arrow-go
// v18 fixed it with an encoder pool, and pooledZstd backports that fix. v15 offers no
// RegisterCodec, hence the linkname.
//
//go:linkname parquetCodecs github.com/apache/arrow/go/v15/parquet/compress.codecs
var parquetCodecs map[compress.Compression]compress.Codec

var installZstdOnce sync.Once

// installPooledZstd swaps arrow's zstd codec for pooledZstd, once, before the first
// Parquet writer is made. The output is the same zstd frames.
func installPooledZstd() {
	installZstdOnce.Do(func() {
		base, err := compress.GetCodec(compress.Codecs.Zstd)
		if err != nil {
			return
		}
		if _, done := base.(*pooledZstd); !done {
			parquetCodecs[compress.Codecs.Zstd] = &pooledZstd{Codec: base}
		}
	})
}

// pooledZstd is arrow's zstd codec with EncodeLevel drawing its encoder from a free list
// per level instead of building one per call. A free list, not a sync.Pool: the pool is
// emptied at every garbage collection, and the export collects often, so encoders (their
// tables and an 8 MB history each) were rebuilt every few pages. Safe for concurrent use.
type pooledZstd struct {
	compress.Codec
	mu   sync.Mutex
	free map[zstd.EncoderLevel][]*zstd.Encoder
}

// maxFreeEncoders bounds the encoders kept per level: one per Parquet writer running at
// once is enough (one per view in an export).
const maxFreeEncoders = 8

func (z *pooledZstd) get(lvl zstd.EncoderLevel) *zstd.Encoder {
	z.mu.Lock()
	if l := z.free[lvl]; len(l) > 0 {
		enc := l[len(l)-1]
		z.free[lvl] = l[:len(l)-1]
		z.mu.Unlock()
		return enc
	}
	z.mu.Unlock()
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(lvl), zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // only invalid options fail, and these are constants
	}
	return enc
}

func (z *pooledZstd) put(lvl zstd.EncoderLevel, enc *zstd.Encoder) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.free == nil {
		z.free = map[zstd.EncoderLevel][]*zstd.Encoder{}
	}
	if len(z.free[lvl]) < maxFreeEncoders {
		z.free[lvl] = append(z.free[lvl], enc)
	}
}

// EncodeLevel compresses src as one zstd frame at level, as arrow's codec does.
func (z *pooledZstd) EncodeLevel(dst, src []byte, level int) []byte {
	lvl := zstd.EncoderLevelFromZstd(level)
	if level == compress.DefaultCompressionLevel {
		lvl = zstd.SpeedDefault
	}
	enc := z.get(lvl)
	defer z.put(lvl, enc)
	return enc.EncodeAll(src, dst[:0])
}
