package models

import (
	"fmt"
	"testing"
)

// TestTransposeBlockMatchesNaive checks transposeBlock (the AVX-512 tile
// kernel for float64 where the CPU has it, with scalar edges, and the
// scalar tiles for float32 and elsewhere) against an element-by-element
// transpose: sizes below, at and past a tile in either direction, strides
// wider than the matrix, and row ranges that start and end inside a tile.
// Values of t outside the range's columns must stay as they were.
func TestTransposeBlockMatchesNaive(t *testing.T) {
	for _, tc := range []struct{ rows, cols, pad, lo, hi int }{
		{1, 1, 0, 0, 1}, {3, 5, 0, 0, 3}, {8, 8, 0, 0, 8}, {8, 16, 0, 0, 8},
		{16, 8, 0, 0, 16}, {9, 17, 2, 0, 9}, {17, 9, 0, 3, 14}, {24, 130, 5, 8, 24},
		{1600, 128, 0, 0, 1600}, {128, 1600, 0, 64, 100}, {64, 7, 1, 0, 64}, {13, 40, 3, 5, 6},
	} {
		t.Run(fmt.Sprintf("%dx%d/pad=%d/rows=%d-%d", tc.rows, tc.cols, tc.pad, tc.lo, tc.hi), func(t *testing.T) {
			checkTransposeBlock[float64](t, tc.rows, tc.cols, tc.pad, tc.lo, tc.hi)
			checkTransposeBlock[float32](t, tc.rows, tc.cols, tc.pad, tc.lo, tc.hi)
		})
	}
}

func checkTransposeBlock[F float32 | float64](t *testing.T, rows, cols, pad, lo, hi int) {
	t.Helper()
	lda := cols + pad
	a := make([]F, rows*lda)
	for i := range a {
		a[i] = F(i%1009) + 0.5
	}
	got := make([]F, rows*cols)
	for i := range got {
		got[i] = -1
	}
	transposeBlock(a, rows, cols, lda, lo, hi, got)
	for j := range cols {
		for i := range rows {
			want := F(-1)
			if i >= lo && i < hi {
				want = a[i*lda+j]
			}
			if v := got[j*rows+i]; v != want {
				t.Fatalf("%T: t[%d][%d] = %v, want %v", a, j, i, v, want)
			}
		}
	}
}
