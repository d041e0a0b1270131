package sample

import "fmt"

// validateSeqs checks SeqLens and StateIn against the rows.
func (b *Batch) validateSeqs() error {
	if len(b.SeqLens) == 0 {
		if len(b.StateIn) != 0 {
			return fmt.Errorf("sample: batch has %d StateIn values but no sequences", len(b.StateIn))
		}
		return nil
	}
	total := 0
	for i, l := range b.SeqLens {
		if l < 1 {
			return fmt.Errorf("sample: batch sequence %d has length %d; lengths must be at least 1", i, l)
		}
		total += l
	}
	if total != b.Len() {
		return fmt.Errorf("sample: batch sequence lengths add up to %d, the batch has %d rows", total, b.Len())
	}
	if b.StateDim < 1 || len(b.StateIn) != len(b.SeqLens)*b.StateDim {
		return fmt.Errorf("sample: batch has %d StateIn values for %d sequences of state width %d", len(b.StateIn), len(b.SeqLens), b.StateDim)
	}
	return nil
}

// concatSeqs joins the batches' sequences into out: all batches must have
// them (with one state width) or none.
func concatSeqs(out *Batch, batches []Batch) error {
	with := 0
	for i := range batches {
		if len(batches[i].SeqLens) > 0 {
			with++
		}
	}
	if with == 0 {
		return nil
	}
	out.StateDim = batches[0].StateDim
	for i := range batches {
		b := &batches[i]
		if b.Len() == 0 {
			continue
		}
		if len(b.SeqLens) == 0 || b.StateDim != out.StateDim {
			return fmt.Errorf("sample: concat batch %d has %d sequences of state width %d, batch 0 state width %d: recurrent and feed-forward batches do not mix",
				i, len(b.SeqLens), b.StateDim, out.StateDim)
		}
		out.SeqLens = append(out.SeqLens, b.SeqLens...)
		out.StateIn = append(out.StateIn, b.StateIn...)
	}
	return nil
}

// SeqStarts returns the first row of every sequence of b, reusing dst.
func (b *Batch) SeqStarts(dst []int) []int {
	dst = dst[:0]
	r := 0
	for _, l := range b.SeqLens {
		dst = append(dst, r)
		r += l
	}
	return dst
}

// Padded lays a set of a batch's sequences out for a recurrent model:
// time-major (row t·B+j is step t of the j-th chosen sequence) and padded
// with zeros to the longest chosen sequence's length T. Mask is 1 on real
// steps and 0 on padding, so that losses can ignore the padding. Its
// buffers are reused from call to call.
type Padded struct {
	// T is the padded length and B the number of sequences.
	T, B int
	// Valid is the number of real steps: the sum of the chosen lengths.
	Valid int
	// Mask [T·B] marks real steps with 1.
	Mask []float64
	// State [B×StateDim] is each chosen sequence's initial state.
	State []float64

	starts, lens []int
}

// Layout chooses the sequences seqs (indices into b.SeqLens, in the order
// they will appear) and computes T, Valid, Mask and State. starts is
// b.SeqStarts.
func (p *Padded) Layout(b *Batch, starts, seqs []int) {
	p.B, p.T, p.Valid = len(seqs), 0, 0
	p.starts, p.lens = p.starts[:0], p.lens[:0]
	for _, s := range seqs {
		l := b.SeqLens[s]
		p.starts = append(p.starts, starts[s])
		p.lens = append(p.lens, l)
		p.T = max(p.T, l)
		p.Valid += l
	}
	p.Mask = Resize(p.Mask, p.T*p.B)
	for t := 0; t < p.T; t++ {
		for j, l := range p.lens {
			m := 0.0
			if t < l {
				m = 1
			}
			p.Mask[t*p.B+j] = m
		}
	}
	d := b.StateDim
	p.State = Resize(p.State, p.B*d)
	for j, s := range seqs {
		copy(p.State[j*d:(j+1)*d], b.StateIn[s*d:(s+1)*d])
	}
}

// Pad lays out column col (rows of width values, such as b.Obs with
// b.ObsDim) for the chosen sequences into dst, grown as needed, and
// returns it: [T·B×width], zero on padding.
func (p *Padded) Pad(dst, col []float64, width int) []float64 {
	dst = Resize(dst, p.T*p.B*width)
	for t := 0; t < p.T; t++ {
		for j, l := range p.lens {
			row := dst[(t*p.B+j)*width : (t*p.B+j+1)*width]
			if t < l {
				r := p.starts[j] + t
				copy(row, col[r*width:(r+1)*width])
			} else {
				clear(row)
			}
		}
	}
	return dst
}
