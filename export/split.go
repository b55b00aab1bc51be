package export

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// Split names.
const (
	SplitTrain      = "train"
	SplitValidation = "validation"
)

// SplitOf assigns a question to train or validation: the first 8 bytes of
// sha256(seed, question id), as a fraction of 2^64, below fraction means validation. Every
// episode of a question lands on the same side, and the same seed gives the same split on
// every run and machine.
func SplitOf(seed int64, questionID string, fraction float64) string {
	if fraction <= 0 {
		return SplitTrain
	}
	h := sha256.New()
	h.Write(strconv.AppendInt(nil, seed, 10))
	h.Write([]byte{0})
	h.Write([]byte(questionID))
	var sum [sha256.Size]byte
	u := binary.BigEndian.Uint64(h.Sum(sum[:0]))
	if float64(u>>11)/(1<<53) < fraction {
		return SplitValidation
	}
	return SplitTrain
}
