package memory_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/companionhq/companion/internal/memory"
)

func TestEncodeDecode(t *testing.T) {
	// The bytes are little-endian IEEE 754 float32s: 1 is 0x3f800000.
	if got, want := memory.EncodeVector([]float32{1, -2}), []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}; !bytes.Equal(got, want) {
		t.Errorf("Encode = % x, want % x", got, want)
	}
	tests := [][]float32{
		nil,
		{0},
		{1, -1, 0.5, float32(math.Copysign(0, -1)), math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(1))},
	}
	for i, v := range tests {
		b := memory.EncodeVector(v)
		if len(b) != 4*len(v) {
			t.Fatalf("%d: %d bytes for %d floats", i, len(b), len(v))
		}
		got, err := memory.DecodeVector(b)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if len(got) != len(v) {
			t.Fatalf("%d: decoded %d floats, want %d", i, len(got), len(v))
		}
		for j := range v {
			if math.Float32bits(got[j]) != math.Float32bits(v[j]) {
				t.Errorf("%d: float %d is %v, want %v", i, j, got[j], v[j])
			}
		}
	}
	for _, n := range []int{1, 3, 5} {
		if _, err := memory.DecodeVector(make([]byte, n)); err == nil {
			t.Errorf("Decode of %d bytes: no error", n)
		}
	}
}
