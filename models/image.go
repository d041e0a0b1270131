package models

import (
	"fmt"
	"math"

	"github.com/gray-ml/gray/spaces"
)

// ImageOptions are the model config keys that shape the preprocessing of
// image observations (a Box of shape [H, W, C] with values in [0, 255] and
// C of 1, 3 or 4, such as PixelPong-v0's 210×160×3 frames). ModelOptions
// carries them as fields of the same names (ModelOptions.Image); the keys framestack and frame_diff need an image
// observation and are an error for any other.
type ImageOptions struct {
	// Grayscale averages the colour channels into one (nil: true).
	Grayscale *bool `json:"grayscale,omitempty"`
	// Dim is the side of the square the cropped frame is shrunk to by
	// averaging the pixels each output pixel covers (0: 84, the size of the
	// classic Atari conv net; 80 is Ray 0.2's Pong example, 42 a quick
	// conv net). A frame smaller than Dim keeps its size.
	Dim int `json:"dim,omitempty"`
	// Crop removes [top, bottom, left, right] pixels from each side before
	// shrinking (empty: none). For PixelPong-v0, [34, 16, 0, 0] keeps only
	// the playing field, as Ray 0.2's example does.
	Crop []int `json:"crop,omitempty"`
	// FrameStack stacks the last FrameStack processed frames as channels
	// (0 or 1: no stacking). The first observation of an episode fills
	// every slot.
	FrameStack int `json:"framestack,omitempty"`
	// FrameDiff replaces each processed frame by its difference from the
	// previous one (zero on an episode's first observation), as Ray 0.2's
	// Pong example feeds its network. With FrameStack, the differences are
	// stacked.
	FrameDiff bool `json:"frame_diff,omitempty"`
}

// Image returns the options' image preprocessing keys.
func (o ModelOptions) Image() ImageOptions {
	return ImageOptions{Grayscale: o.Grayscale, Dim: o.Dim, Crop: o.Crop, FrameStack: o.FrameStack, FrameDiff: o.FrameDiff}
}

// defaultImageDim is Dim's default.
const defaultImageDim = 84

// IsImage reports whether an observation space holds images the image
// preprocessor handles: a Box of shape [H, W, C] with H, W ≥ 2, C of 1, 3
// or 4 and every value in [0, 255].
func IsImage(space spaces.Space) bool {
	b, ok := space.(spaces.Box)
	if !ok {
		return false
	}
	s := b.Shape()
	if len(s) != 3 || s[0] < 2 || s[1] < 2 || (s[2] != 1 && s[2] != 3 && s[2] != 4) {
		return false
	}
	for i := range b.Low {
		if b.Low[i] < 0 || b.High[i] > 255 {
			return false
		}
	}
	return true
}

// check rejects framestack and frame_diff for observations that
// are not images, naming the key, so that a config error shows before
// training starts.
func (o ImageOptions) check(space spaces.Space) error {
	if o.FrameStack < 0 {
		return fmt.Errorf("models: framestack %d: use 0 or 1 for none, or the number of frames to stack", o.FrameStack)
	}
	if IsImage(space) {
		return nil
	}
	switch {
	case o.FrameStack > 1:
		return fmt.Errorf("models: framestack %d needs image observations (a Box [H, W, C] of values in [0, 255], C of 1, 3 or 4); the observation space is %v: remove framestack", o.FrameStack, space)
	case o.FrameDiff:
		return fmt.Errorf("models: frame_diff needs image observations (a Box [H, W, C] of values in [0, 255], C of 1, 3 or 4); the observation space is %v: remove frame_diff", space)
	}
	return nil
}

// PreprocessorFor is the catalog's preprocessor for an environment and the
// model options: the one registered for envName if any, the image
// preprocessor configured by opts for image observations, otherwise the
// default for the space (NewPreprocessor). framestack or frame_diff on a
// space that is not an image is an error naming the key.
func PreprocessorFor(envName string, space spaces.Space, opts ImageOptions) (Preprocessor, error) {
	if err := opts.check(space); err != nil {
		return nil, err
	}
	preprocessors.RLock()
	_, registered := preprocessors.byEnv[envName]
	preprocessors.RUnlock()
	if registered || !IsImage(space) {
		return GetPreprocessor(envName, space, nil)
	}
	return NewImagePreprocessor(space.(spaces.Box), opts)
}

// ImagePreprocessor turns image observations into what a conv net reads:
// crop, optional grayscale, shrink to at most Dim×Dim by averaging, scale
// to [0, 1], then optionally frame differencing and frame stacking. With
// neither of the last two it is stateless; with either, its output depends
// on the episode so far, which it keeps per stream (see StreamPreprocessor).
// It allocates nothing per observation once a stream exists. Distinct
// streams may be transformed at once (TransformStream, TransformFrame);
// other uses are not safe for concurrent use.
type ImagePreprocessor struct {
	opts        ImageOptions
	inH, inW    int // input frame
	inC         int
	top, left   int // crop offsets
	outH, outW  int // one processed frame
	outC        int // channels of one processed frame
	stack       int // frames stacked (≥ 1)
	rowLo, rowN []int
	colLo, colN []int
	streams     map[int]*imageStream
	scratch     []float64 // one processed frame (Transform)
}

// imageStream is the history of one stream.
type imageStream struct {
	prev   []float64   // the previous processed frame (frame_diff)
	frames [][]float64 // ring of the last `stack` frames (after differencing)
	next   int         // ring slot the next frame goes to
	cur    []float64   // the current processed frame
}

// NewImagePreprocessor returns the image preprocessor for space with opts.
func NewImagePreprocessor(space spaces.Box, opts ImageOptions) (*ImagePreprocessor, error) {
	if !IsImage(space) {
		return nil, fmt.Errorf("models: image preprocessing needs a Box [H, W, C] of values in [0, 255] with C of 1, 3 or 4, got %v", space)
	}
	if err := opts.check(space); err != nil {
		return nil, err
	}
	s := space.Shape()
	p := &ImagePreprocessor{opts: opts, inH: s[0], inW: s[1], inC: s[2], streams: map[int]*imageStream{}}
	h, w := p.inH, p.inW
	if len(opts.Crop) > 0 {
		c := opts.Crop
		if len(c) != 4 || c[0] < 0 || c[1] < 0 || c[2] < 0 || c[3] < 0 || c[0]+c[1] > h-2 || c[2]+c[3] > w-2 {
			return nil, fmt.Errorf("models: crop %v must be [top, bottom, left, right] of non-negative pixel counts leaving at least 2×2 of a %d×%d image", c, h, w)
		}
		p.top, p.left = c[0], c[2]
		h, w = h-c[0]-c[1], w-c[2]-c[3]
	}
	dim := opts.Dim
	if dim == 0 {
		dim = defaultImageDim
	}
	if dim < 2 {
		return nil, fmt.Errorf("models: dim %d: the side of the processed image must be at least 2", opts.Dim)
	}
	p.outH, p.outW = min(h, dim), min(w, dim)
	p.outC = p.inC
	if opts.Grayscale == nil || *opts.Grayscale {
		p.outC = 1
	}
	p.stack = max(opts.FrameStack, 1)
	p.rowLo, p.rowN = bins(h, p.outH)
	p.colLo, p.colN = bins(w, p.outW)
	p.scratch = make([]float64, p.frameSize())
	return p, nil
}

// bins splits n input pixels into m ≤ n contiguous runs of nearly equal
// length, returning each run's start and length.
func bins(n, m int) (lo, cnt []int) {
	lo, cnt = make([]int, m), make([]int, m)
	for i := range m {
		a, b := i*n/m, (i+1)*n/m
		lo[i], cnt[i] = a, b-a
	}
	return lo, cnt
}

func (p *ImagePreprocessor) frameSize() int { return p.outH * p.outW * p.outC }

// Stateful reports whether the output depends on earlier observations
// (frame stacking or differencing).
func (p *ImagePreprocessor) Stateful() bool { return p.stack > 1 || p.opts.FrameDiff }

// Shape implements Preprocessor: [Dim, Dim, channels × frames stacked].
func (p *ImagePreprocessor) Shape() []int { return []int{p.outH, p.outW, p.outC * p.stack} }

// Size implements Preprocessor.
func (p *ImagePreprocessor) Size() int { return p.frameSize() * p.stack }

// Transform implements Preprocessor, treating obs as an episode's first
// observation: stacked slots repeat it and a difference is zero. Callers
// that step episodes use TransformStream.
func (p *ImagePreprocessor) Transform(obs, dst []float64) error {
	if err := p.checkIO(len(obs), dst); err != nil {
		return err
	}
	f := p.scratch
	if p.opts.FrameDiff {
		clear(f)
	} else {
		p.shrink(obs, f)
	}
	p.spread(dst, func(int) []float64 { return f })
	return nil
}

// TransformStream implements StreamPreprocessor. Calls for distinct
// streams may run at once on different goroutines once each stream
// exists (its first observation was transformed), as a rollout worker's
// sub-environments do; Transform and ResetStream may not run beside them.
func (p *ImagePreprocessor) TransformStream(stream int, start bool, obs, dst []float64) error {
	if err := p.checkIO(len(obs), dst); err != nil {
		return err
	}
	p.transformStream(stream, start, dst, func(out []float64) { p.shrink(obs, out) })
	return nil
}

// TransformFrame is TransformStream of an 8-bit frame (an environment's
// rendering, which holds the observation's values as bytes): the same
// result to the bit, reading an eighth of the memory. It may run beside
// TransformStream and other TransformFrame calls as they may.
func (p *ImagePreprocessor) TransformFrame(stream int, start bool, frame []uint8, dst []float64) error {
	if err := p.checkIO(len(frame), dst); err != nil {
		return err
	}
	p.transformStream(stream, start, dst, func(out []float64) { p.shrinkFrame(frame, out) })
	return nil
}

// transformStream shrinks one observation of a stream into its frame (with
// shrink) and writes the stream's stacked observation to dst.
func (p *ImagePreprocessor) transformStream(stream int, start bool, dst []float64, shrink func(frame []float64)) {
	if !p.Stateful() {
		shrink(dst[:p.frameSize()])
		return
	}
	st := p.stream(stream, &start)
	shrink(st.cur)
	p.push(st, start, dst)
}

// stream returns a stream's history, creating it (which then starts an
// episode) when it is new.
func (p *ImagePreprocessor) stream(stream int, start *bool) *imageStream {
	st := p.streams[stream]
	if st == nil {
		st = p.newStream()
		p.streams[stream] = st
		*start = true
	}
	return st
}

// push takes st.cur, the newest processed frame, into the stream's
// history (differenced and stacked as configured) and writes the stacked
// result into dst.
func (p *ImagePreprocessor) push(st *imageStream, start bool, dst []float64) {
	f := st.cur
	if p.opts.FrameDiff {
		if start {
			copy(st.prev, st.cur)
		}
		// frames[next] receives cur − prev; prev becomes cur.
		d := st.frames[st.next]
		for i, v := range st.cur {
			d[i] = v - st.prev[i]
		}
		st.prev, st.cur = st.cur, st.prev
		f = d
	} else {
		copy(st.frames[st.next], f)
		f = st.frames[st.next]
	}
	if start {
		for _, fr := range st.frames {
			copy(fr, f)
		}
	}
	newest := st.next
	st.next = (st.next + 1) % p.stack
	// Channel group j holds the frames from oldest (j = 0) to newest.
	p.spread(dst, func(j int) []float64 {
		return st.frames[(newest+1+j)%p.stack]
	})
}

// ResetStream forgets a stream's history: its next observation starts an
// episode.
func (p *ImagePreprocessor) ResetStream(stream int) { delete(p.streams, stream) }

func (p *ImagePreprocessor) newStream() *imageStream {
	n := p.frameSize()
	st := &imageStream{prev: make([]float64, n), cur: make([]float64, n), frames: make([][]float64, p.stack)}
	for i := range st.frames {
		st.frames[i] = make([]float64, n)
	}
	return st
}

func (p *ImagePreprocessor) checkIO(obsLen int, dst []float64) error {
	if n := p.inH * p.inW * p.inC; obsLen != n {
		return fmt.Errorf("models: image observation has %d values, want %d×%d×%d = %d", obsLen, p.inH, p.inW, p.inC, n)
	}
	if len(dst) < p.Size() {
		return fmt.Errorf("models: preprocessor output buffer holds %d values, needs %d", len(dst), p.Size())
	}
	return nil
}

// shrink crops, converts and averages obs into one processed frame f,
// scaled to [0, 1]. Colour values outside [0, 255] (NaN included) are
// clamped to it, so that a bad frame cannot poison the network.
func (p *ImagePreprocessor) shrink(obs, f []float64) {
	if p.outC == 1 && p.inC == 3 {
		p.shrinkRGBToGray(obs, f)
		return
	}
	shrinkAny(p, obs, f)
}

// shrinkFrame is shrink of an 8-bit frame. Its sums of whole numbers are
// exact, so it gives the same bits as shrink of the frame widened to
// float64.
func (p *ImagePreprocessor) shrinkFrame(frame []uint8, f []float64) {
	if p.outC == 1 && p.inC == 3 {
		p.shrinkRGBToGrayFrame(frame, f)
		return
	}
	shrinkAny(p, frame, f)
}

// level is a colour value as shrink counts it: clamped to [0, 255], NaN
// as 0.
func level[T uint8 | float64](v T) float64 { return clamp255(float64(v)) }

// shrinkAny is shrink for any channel layout, from float64 observations
// or 8-bit frames.
func shrinkAny[T uint8 | float64](p *ImagePreprocessor, obs []T, f []float64) {
	clear(f)
	gray := p.outC == 1 && p.inC > 1
	// Grayscale averages the colour channels (alpha, a 4th, is ignored).
	colours := min(p.inC, 3)
	for oy := range p.outH {
		y0, ny := p.top+p.rowLo[oy], p.rowN[oy]
		for ox := range p.outW {
			x0, nx := p.left+p.colLo[ox], p.colN[ox]
			out := f[(oy*p.outW+ox)*p.outC : (oy*p.outW+ox+1)*p.outC]
			for y := y0; y < y0+ny; y++ {
				row := obs[(y*p.inW+x0)*p.inC : (y*p.inW+x0+nx)*p.inC]
				if gray && p.inC == 3 {
					// The common case (RGB to gray), without the inner loop.
					s := 0.0
					for x := 0; x+2 < len(row); x += 3 {
						s += level(row[x]) + level(row[x+1]) + level(row[x+2])
					}
					out[0] += s / 3
					continue
				}
				for x := 0; x < nx; x++ {
					px := row[x*p.inC : (x+1)*p.inC]
					if gray {
						s := 0.0
						for c := range colours {
							s += level(px[c])
						}
						out[0] += s / float64(colours)
					} else {
						for c := range out {
							out[c] += level(px[c])
						}
					}
				}
			}
			scale := 1 / (255 * float64(nx*ny))
			for c := range out {
				out[c] *= scale
			}
		}
	}
}

// shrinkRGBToGray is shrink for the common case, RGB frames to gray: it
// walks each input row of a bin row once, front to back, summing each
// output pixel's run of colour values, and scales each sum once at the end
// (the mean of the three channels over the bin). A value's bits, read as
// an unsigned integer, are at most those of 255 exactly when it lies in
// [0, 255] (negative values, NaN and +Inf all compare above), so one
// comparison lets the in-range values, nearly all of them, through.
func (p *ImagePreprocessor) shrinkRGBToGray(obs, f []float64) {
	const max255 = 0x406FE00000000000         // math.Float64bits(255)
	w := p.colLo[p.outW-1] + p.colN[p.outW-1] // the cropped width
	for oy := range p.outH {
		out := f[oy*p.outW : (oy+1)*p.outW]
		clear(out)
		y0, ny := p.top+p.rowLo[oy], p.rowN[oy]
		for y := y0; y < y0+ny; y++ {
			row := obs[(y*p.inW+p.left)*3 : (y*p.inW+p.left+w)*3]
			for ox, lo := range p.colLo {
				s := 0.0
				for _, v := range row[lo*3 : (lo+p.colN[ox])*3] {
					if math.Float64bits(v) <= max255 {
						s += v
					} else {
						s += clamp255(v)
					}
				}
				out[ox] += s
			}
		}
		for ox := range out {
			out[ox] /= 3 * 255 * float64(p.colN[ox]*ny)
		}
	}
}

// shrinkRGBToGrayFrame is shrinkRGBToGray of an 8-bit frame: crop, gray
// and shrink in one pass over the cropped bytes, summing each output
// pixel's bin in integers (exact, so the result is shrinkRGBToGray's to
// the bit) and scaling once.
func (p *ImagePreprocessor) shrinkRGBToGrayFrame(frame []uint8, f []float64) {
	w := p.colLo[p.outW-1] + p.colN[p.outW-1] // the cropped width
	for oy := range p.outH {
		out := f[oy*p.outW : (oy+1)*p.outW]
		y0, ny := p.top+p.rowLo[oy], p.rowN[oy]
		for ox, lo := range p.colLo {
			hi := lo + p.colN[ox]
			var s uint32
			for y := y0; y < y0+ny; y++ {
				row := frame[(y*p.inW+p.left)*3 : (y*p.inW+p.left+w)*3]
				for _, v := range row[lo*3 : hi*3] {
					s += uint32(v)
				}
			}
			out[ox] = float64(s) / (3 * 255 * float64(p.colN[ox]*ny))
		}
	}
}

func clamp255(v float64) float64 {
	if v >= 0 && v <= 255 {
		return v
	}
	if v > 255 {
		return 255
	}
	return 0 // negative or NaN
}

// spread writes frame(j) as channel group j of every pixel of dst.
func (p *ImagePreprocessor) spread(dst []float64, frame func(j int) []float64) {
	if p.stack == 1 {
		copy(dst, frame(0))
		return
	}
	c, k := p.outC, p.stack
	for j := range k {
		f := frame(j)
		if c == 1 { // gray: one value per pixel, no copy call each
			out := dst[j : len(f)*k]
			for px, v := range f {
				out[px*k] = v
			}
			continue
		}
		for px := 0; px < p.outH*p.outW; px++ {
			copy(dst[(px*k+j)*c:(px*k+j+1)*c], f[px*c:(px+1)*c])
		}
	}
}

// StreamPreprocessor is a Preprocessor whose output depends on the earlier
// observations of an episode (frame stacking, frame differencing). It
// keeps one history per stream: a rollout worker uses one stream per
// sub-environment and says when an observation starts an episode.
type StreamPreprocessor interface {
	Preprocessor
	// Stateful reports whether the output depends on the history at all;
	// when false, TransformStream is Transform.
	Stateful() bool
	// TransformStream transforms obs, the next observation of stream; with
	// start (or for a stream never seen) it begins a new episode.
	TransformStream(stream int, start bool, obs, dst []float64) error
	// ResetStream forgets a stream's history.
	ResetStream(stream int)
}

var _ StreamPreprocessor = (*ImagePreprocessor)(nil)
