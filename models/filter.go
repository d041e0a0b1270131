package models

import (
	"fmt"
	"math"
)

// RunningStat holds the count, mean and sum of squared deviations (M2) of
// a stream of vectors, per dimension. Push adds one vector (Welford's
// update); Merge combines two streams exactly (Chan et al.'s parallel
// update), so statistics gathered on several workers merge to what one
// worker would have computed on all the data. Its fields are exported so
// it travels through the object store and checkpoints.
type RunningStat struct {
	N    int64     `json:"n"`
	Mean []float64 `json:"mean"`
	M2   []float64 `json:"m2"`
}

// NewRunningStat returns empty statistics for vectors of the given size.
func NewRunningStat(size int) RunningStat {
	return RunningStat{Mean: make([]float64, size), M2: make([]float64, size)}
}

// Size is the vector size.
func (s *RunningStat) Size() int { return len(s.Mean) }

// Push adds one vector.
func (s *RunningStat) Push(x []float64) {
	s.N++
	n := float64(s.N)
	for i, v := range x[:len(s.Mean)] {
		d := v - s.Mean[i]
		s.Mean[i] += d / n
		s.M2[i] += d * (v - s.Mean[i])
	}
}

// Merge adds the vectors summarised by o.
func (s *RunningStat) Merge(o RunningStat) error {
	if len(o.Mean) != len(s.Mean) || len(o.M2) != len(s.M2) {
		return fmt.Errorf("models: merging statistics of size %d into size %d", len(o.Mean), len(s.Mean))
	}
	if o.N == 0 {
		return nil
	}
	na, nb := float64(s.N), float64(o.N)
	n := na + nb
	for i := range s.Mean {
		d := o.Mean[i] - s.Mean[i]
		s.Mean[i] += d * nb / n
		s.M2[i] += o.M2[i] + d*d*na*nb/n
	}
	s.N += o.N
	return nil
}

// Var returns the sample variance of dimension i (0 with fewer than two
// vectors).
func (s *RunningStat) Var(i int) float64 {
	if s.N < 2 {
		return 0
	}
	return s.M2[i] / float64(s.N-1)
}

// Copy returns a deep copy.
func (s RunningStat) Copy() RunningStat {
	return RunningStat{N: s.N, Mean: append([]float64(nil), s.Mean...), M2: append([]float64(nil), s.M2...)}
}

func (s *RunningStat) reset() {
	s.N = 0
	clear(s.Mean)
	clear(s.M2)
}

// MeanStdFilter normalises observations by a running mean and standard
// deviation, then clips them to ±Clip.
//
// Keeping workers in sync: each worker's filter updates its statistics as
// it sees observations and also records them in a delta. Once per
// iteration the driver collects every worker's TakeDelta(), Merges them
// into its own filter, and sends Stats() back to each worker's SetStats.
// Every worker then normalises with statistics of all the data seen.
type MeanStdFilter struct {
	// Demean subtracts the mean; Destd divides by the standard deviation.
	Demean, Destd bool
	// Clip bounds the output to [-Clip, Clip]; 0 means no clipping.
	Clip  float64
	stats RunningStat
	delta RunningStat
}

// NewMeanStdFilter returns a filter for observations of size values that
// demeans, divides by the standard deviation and clips to ±clip (0: none).
func NewMeanStdFilter(size int, clip float64) *MeanStdFilter {
	return &MeanStdFilter{Demean: true, Destd: true, Clip: clip, stats: NewRunningStat(size), delta: NewRunningStat(size)}
}

// Size is the observation size.
func (f *MeanStdFilter) Size() int { return len(f.stats.Mean) }

// Apply normalises obs in place; with update it first adds obs to the
// statistics (training), without it only reads them (evaluation).
func (f *MeanStdFilter) Apply(obs []float64, update bool) error {
	if len(obs) != f.Size() {
		return fmt.Errorf("models: MeanStdFilter of size %d got an observation of %d values", f.Size(), len(obs))
	}
	if update {
		for i, v := range obs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("models: MeanStdFilter: observation value %d is %v", i, v)
			}
		}
		f.stats.Push(obs)
		f.delta.Push(obs)
	}
	for i, v := range obs {
		if f.Demean {
			v -= f.stats.Mean[i]
		}
		if f.Destd && f.stats.N >= 2 {
			v /= math.Sqrt(f.stats.Var(i)) + 1e-8
		}
		if f.Clip > 0 {
			v = min(max(v, -f.Clip), f.Clip)
		}
		obs[i] = v
	}
	return nil
}

// Stats returns a copy of the filter's statistics.
func (f *MeanStdFilter) Stats() RunningStat { return f.stats.Copy() }

// SetStats replaces the statistics (with a master filter's) and clears
// the delta.
func (f *MeanStdFilter) SetStats(s RunningStat) error {
	if len(s.Mean) != f.Size() || len(s.M2) != f.Size() {
		return fmt.Errorf("models: MeanStdFilter of size %d given statistics of size %d", f.Size(), len(s.Mean))
	}
	f.stats = s.Copy()
	f.delta.reset()
	return nil
}

// TakeDelta returns the statistics of the observations seen since the last
// TakeDelta or SetStats, and clears them.
func (f *MeanStdFilter) TakeDelta() RunningStat {
	d := f.delta.Copy()
	f.delta.reset()
	return d
}

// Merge adds a worker's delta to this filter's statistics.
func (f *MeanStdFilter) Merge(delta RunningStat) error {
	if err := f.stats.Merge(delta); err != nil {
		return fmt.Errorf("models: MeanStdFilter: %w", err)
	}
	return nil
}
