// Package fastjson is the one seam to the reflection-free JSON library that the hot
// paths use (decoding episode lines, encoding export rows, scanning masks). It reads and
// writes the same JSON tags as encoding/json. Swapping the library is an edit of this
// file alone.
//
// The library is github.com/goccy/go-json at v0.12.0 or later: v0.10.x trips Go's
// checkptr under the race detector (decoder.unescapeString), so `make race` pins the
// version through this file's test.
package fastjson

import (
	"io"

	gojson "github.com/goccy/go-json"
)

// RawMessage is a raw encoded JSON value, kept undecoded.
type RawMessage = gojson.RawMessage

// Encoder writes JSON values to a stream, one per Encode call, each followed by a newline.
type Encoder = gojson.Encoder

// Unmarshal decodes data into v, as encoding/json.Unmarshal does.
func Unmarshal(data []byte, v any) error { return gojson.Unmarshal(data, v) }

// Marshal encodes v, as encoding/json.Marshal does.
func Marshal(v any) ([]byte, error) { return gojson.Marshal(v) }

// NewEncoder returns an Encoder that writes to w.
func NewEncoder(w io.Writer) *Encoder { return gojson.NewEncoder(w) }
