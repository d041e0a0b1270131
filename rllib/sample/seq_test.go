package sample

import (
	"slices"
	"strings"
	"testing"
)

// seqBatch is a batch of rows 0..n-1 whose observation is the row number,
// cut into sequences of the given lengths with state [10·k, 10·k+1] for
// sequence k.
func seqBatch(lens ...int) Batch {
	n := 0
	for _, l := range lens {
		n += l
	}
	b := Batch{ObsDim: 1, ActDim: 1, StateDim: 2, SeqLens: lens,
		Obs: make([]float64, n), Actions: make([]float64, n), Rewards: make([]float64, n),
		Terminated: make([]bool, n), Truncated: make([]bool, n), Boundary: make([]bool, n), Bootstrap: make([]float64, n)}
	for r := range n {
		b.Obs[r] = float64(r)
	}
	for k := range lens {
		b.StateIn = append(b.StateIn, float64(10*k), float64(10*k+1))
	}
	b.Boundary[n-1] = true
	return b
}

func TestPaddedIsTimeMajorWithMask(t *testing.T) {
	b := seqBatch(3, 1, 2) // rows 0-2, 3, 4-5
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	starts := b.SeqStarts(nil)
	if !slices.Equal(starts, []int{0, 3, 4}) {
		t.Fatalf("starts %v, want [0 3 4]", starts)
	}
	var p Padded
	p.Layout(&b, starts, []int{2, 0}) // sequences 2 (rows 4, 5) then 0 (rows 0, 1, 2)
	if p.T != 3 || p.B != 2 || p.Valid != 5 {
		t.Fatalf("T %d, B %d, valid %d; want 3, 2, 5", p.T, p.B, p.Valid)
	}
	// Step t of sequence j is row t·B+j; padding is zero and masked.
	wantObs := []float64{4, 0, 5, 1, 0, 2}
	wantMask := []float64{1, 1, 1, 1, 0, 1}
	if got := p.Pad(nil, b.Obs, 1); !slices.Equal(got, wantObs) {
		t.Fatalf("padded obs %v, want %v", got, wantObs)
	}
	if !slices.Equal(p.Mask, wantMask) {
		t.Fatalf("mask %v, want %v", p.Mask, wantMask)
	}
	if !slices.Equal(p.State, []float64{20, 21, 0, 1}) {
		t.Fatalf("initial states %v, want [20 21 0 1]", p.State)
	}
	// Reusing the buffers for a smaller layout clears stale values.
	buf := p.Pad(nil, b.Obs, 1)
	p.Layout(&b, starts, []int{1, 2})
	got := p.Pad(buf, b.Obs, 1)
	if !slices.Equal(got, []float64{3, 4, 0, 5}) || !slices.Equal(p.Mask, []float64{1, 1, 0, 1}) {
		t.Fatalf("second layout: obs %v mask %v", got, p.Mask)
	}
}

func TestSequencesValidateAndConcat(t *testing.T) {
	bad := seqBatch(2, 2)
	bad.SeqLens = []int{2, 1}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "add up to 3") {
		t.Fatalf("lengths not matching the rows: %v", err)
	}
	bad = seqBatch(2, 2)
	bad.StateIn = bad.StateIn[:3]
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "StateIn") {
		t.Fatalf("short StateIn: %v", err)
	}
	bad = seqBatch(2, 2)
	bad.SeqLens = []int{4, 0}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Fatalf("empty sequence: %v", err)
	}

	out, err := Concat(seqBatch(2, 1), seqBatch(3))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.SeqLens, []int{2, 1, 3}) || !slices.Equal(out.StateIn, []float64{0, 1, 10, 11, 0, 1}) || out.StateDim != 2 {
		t.Fatalf("concat: lens %v state %v dim %d", out.SeqLens, out.StateIn, out.StateDim)
	}
	if err := out.Validate(); err != nil {
		t.Fatal(err)
	}
	ff := seqBatch(2)
	ff.SeqLens, ff.StateIn, ff.StateDim = nil, nil, 0
	if _, err := Concat(seqBatch(2), ff); err == nil || !strings.Contains(err.Error(), "do not mix") {
		t.Fatalf("recurrent with feed-forward: %v", err)
	}
}
