package dashboard

import (
	"math"
	"sort"
)

// maxKeysPerRun bounds the result keys a run's series keep. A run that
// writes a new key on every line (a logger keyed by step, say) would
// otherwise grow the server and the page without bound; keys past the
// limit are counted, and the answers say how many were left out.
const maxKeysPerRun = 1000

// maxDroppedKeys bounds the names of left-out keys a run remembers (to
// count each once): past it the count stops growing, and memory with it.
const maxDroppedKeys = 10 * maxKeysPerRun

// column is one result key's values, stored from the first result that
// has the key: vals[i] is result start+i, and results past the end of
// vals lack the key. A key logged once costs one number, not one per
// result of the run.
type column struct {
	start int
	vals  []float64
}

// at is result i's value, NaN where the result lacks the key.
func (c *column) at(i int) float64 {
	j := i - c.start
	if j < 0 || j >= len(c.vals) {
		return math.NaN()
	}
	return c.vals[j]
}

// set records result i's value; i never decreases between calls.
func (c *column) set(i int, v float64) {
	if len(c.vals) == 0 && c.start < i {
		c.start = i
	}
	for c.start+len(c.vals) < i {
		c.vals = append(c.vals, math.NaN())
	}
	c.vals = append(c.vals, v)
}

// series is a run's numeric results as columns, kept current by tailing
// result.json.
type series struct {
	tail    tailer
	tf      *tfSource // for a run read from event files, in place of tail
	keys    []string
	cols    map[string]*column
	dropped map[string]bool // keys past maxKeysPerRun, at most maxDroppedKeys
	n       int
}

func newSeries(root, path string) *series {
	return &series{tail: tailer{root: root, path: path}, cols: map[string]*column{}, dropped: map[string]bool{}}
}

// add appends one result.
func (s *series) add(flat map[string]float64) {
	for k, v := range flat {
		c := s.cols[k]
		if c == nil {
			if len(s.keys) >= maxKeysPerRun {
				if len(s.dropped) < maxDroppedKeys {
					s.dropped[k] = true
				}
				continue
			}
			c = &column{start: s.n}
			s.cols[k] = c
			s.keys = append(s.keys, k)
		}
		c.set(s.n, v)
	}
	s.n++
}

func (s *series) reset() {
	s.keys, s.cols, s.dropped, s.n = nil, map[string]*column{}, map[string]bool{}, 0
}

// column returns key's values, one per result, nil when the run never
// logged it.
func (s *series) column(key string) []float64 {
	c := s.cols[key]
	if c == nil {
		return nil
	}
	out := make([]float64, s.n)
	for i := range out {
		out[i] = c.at(i)
	}
	return out
}

// sortedKeys is the run's keys in name order.
func (s *series) sortedKeys() []string {
	keys := append([]string(nil), s.keys...)
	sort.Strings(keys)
	return keys
}

// points is one key's chart: the finite (x, y) pairs in result order.
type points struct {
	X floats `json:"x"`
	Y floats `json:"y"`
	// N is how many finite points the key has; more than len(X) when
	// the answer was downsampled.
	N int `json:"n"`
}

// pairs collects the results where both x and key's value are finite.
func (s *series) pairs(xs []float64, key string) points {
	c := s.cols[key]
	var p points
	if c == nil {
		return p
	}
	for j, y := range c.vals {
		i := c.start + j
		if i >= len(xs) {
			break
		}
		x := xs[i]
		if math.IsNaN(y) || math.IsInf(y, 0) || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		p.X = append(p.X, x)
		p.Y = append(p.Y, y)
	}
	p.N = len(p.X)
	return p
}

// downsample keeps, of each of buckets equal runs of points, the lowest
// and the highest (in their order), and always the first and last point:
// a chart of width w pixels drawn from 2w points looks as the full series
// does, spikes included. Series of at most 2*buckets points are kept whole.
func downsample(p points, buckets int) points {
	n := len(p.X)
	if buckets <= 0 || n <= 2*buckets {
		return p
	}
	out := points{X: make(floats, 0, 2*buckets+2), Y: make(floats, 0, 2*buckets+2), N: p.N}
	keep := func(i int) {
		if k := len(out.X); k > 0 && out.X[k-1] == p.X[i] && out.Y[k-1] == p.Y[i] {
			return
		}
		out.X = append(out.X, p.X[i])
		out.Y = append(out.Y, p.Y[i])
	}
	keep(0)
	for b := 0; b < buckets; b++ {
		lo, hi := b*n/buckets, (b+1)*n/buckets
		imin, imax := lo, lo
		for i := lo; i < hi; i++ {
			if p.Y[i] < p.Y[imin] {
				imin = i
			}
			if p.Y[i] > p.Y[imax] {
				imax = i
			}
		}
		keep(min(imin, imax))
		keep(max(imin, imax))
	}
	keep(n - 1)
	return out
}
