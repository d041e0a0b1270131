package models

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gray-ml/gray/spaces"
)

func pongSpace() spaces.Box { return spaces.NewBox(0, 255, 210, 160, 3) }

func TestImagePreprocessorShapes(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name string
		opts ImageOptions
		want []int
	}{
		{"default", ImageOptions{}, []int{84, 84, 1}},
		{"Ray 0.2's Pong", ImageOptions{Dim: 80, Crop: []int{34, 16, 0, 0}, FrameDiff: true}, []int{80, 80, 1}},
		{"colour", ImageOptions{Dim: 42, Grayscale: &no}, []int{42, 42, 3}},
		{"stack of 4", ImageOptions{Dim: 42, FrameStack: 4}, []int{42, 42, 4}},
		{"dim above the frame", ImageOptions{Dim: 500}, []int{210, 160, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PreprocessorFor("PixelPong-v0", pongSpace(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Shape()
			if len(got) != 3 || got[0] != tc.want[0] || got[1] != tc.want[1] || got[2] != tc.want[2] {
				t.Errorf("shape %v, want %v", got, tc.want)
			}
			if p.Size() != tc.want[0]*tc.want[1]*tc.want[2] {
				t.Errorf("size %d, want %d", p.Size(), tc.want[0]*tc.want[1]*tc.want[2])
			}
		})
	}
	// The catalog's default for an image space is the image preprocessor.
	if p, err := NewPreprocessor(pongSpace()); err != nil || p.Size() != 84*84 {
		t.Errorf("NewPreprocessor of an image space: %v (size %v), want 84×84 grayscale", err, p)
	}
}

// A 4×4 RGB image shrunk to 2×2: each output pixel is the mean of its 2×2
// block's channel means, scaled to [0, 1].
func TestImagePreprocessorValues(t *testing.T) {
	space := spaces.NewBox(0, 255, 4, 4, 3)
	obs := make([]float64, 48)
	for y := range 4 {
		for x := range 4 {
			for c := range 3 {
				obs[(y*4+x)*3+c] = float64(10*y + x + 20*c)
			}
		}
	}
	p, err := NewImagePreprocessor(space, ImageOptions{Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, p.Size())
	if err := p.Transform(obs, dst); err != nil {
		t.Fatal(err)
	}
	// Block (0,0): y 0..1, x 0..1 → mean of 10y+x is 5.5, plus mean 20c = 20.
	want := []float64{25.5 / 255, 27.5 / 255, 45.5 / 255, 47.5 / 255}
	for i := range want {
		if math.Abs(dst[i]-want[i]) > 1e-12 {
			t.Fatalf("pixel %d = %v, want %v (all %v)", i, dst[i]*255, want[i]*255, dst)
		}
	}
	// Crop the top row and left column off, keeping 3×3 colour pixels.
	no := false
	p, err = NewImagePreprocessor(space, ImageOptions{Crop: []int{1, 0, 1, 0}, Grayscale: &no})
	if err != nil {
		t.Fatal(err)
	}
	dst = make([]float64, p.Size())
	if err := p.Transform(obs, dst); err != nil {
		t.Fatal(err)
	}
	if got := p.Shape(); got[0] != 3 || got[1] != 3 || got[2] != 3 {
		t.Fatalf("cropped shape %v, want [3 3 3]", got)
	}
	if dst[0] != 11.0/255 || dst[2] != 51.0/255 {
		t.Errorf("cropped first pixel %v, want [11 31 51]/255", []float64{dst[0] * 255, dst[1] * 255, dst[2] * 255})
	}
	// Bad values are clamped rather than passed on.
	obs[0] = math.NaN()
	obs[1] = 1e9
	if err := p.Transform(obs, dst); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst {
		if math.IsNaN(v) || v < 0 || v > 1 {
			t.Fatalf("value %d = %v after clamping", i, v)
		}
	}
}

// frames returns a 2×2 one-channel image whose pixels all equal v.
func frame(v float64) []float64 { return []float64{v, v, v, v} }

func TestFrameStackAndDiff(t *testing.T) {
	space := spaces.NewBox(0, 255, 2, 2, 1)
	stack, err := NewImagePreprocessor(space, ImageOptions{FrameStack: 3})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, stack.Size())
	step := func(p *ImagePreprocessor, stream int, start bool, v float64) []float64 {
		t.Helper()
		if err := p.TransformStream(stream, start, frame(v), dst); err != nil {
			t.Fatal(err)
		}
		return dst[:3] // pixel 0's channels (its frames, oldest first)
	}
	eq := func(what string, got []float64, want ...float64) {
		t.Helper()
		for i := range want {
			if math.Abs(got[i]-want[i]/255) > 1e-12 {
				t.Fatalf("%s: %v, want %v/255", what, got, want)
			}
		}
	}
	eq("episode start fills the stack", step(stack, 0, true, 10), 10, 10, 10)
	eq("second frame", step(stack, 0, false, 20), 10, 10, 20)
	eq("other stream starts on its own", step(stack, 1, false, 99), 99, 99, 99)
	eq("third frame", step(stack, 0, false, 30), 10, 20, 30)
	eq("fourth frame drops the oldest", step(stack, 0, false, 40), 20, 30, 40)
	eq("new episode", step(stack, 0, true, 50), 50, 50, 50)
	eq("stream 1 kept its history", step(stack, 1, false, 98), 99, 99, 98)
	stack.ResetStream(1)
	eq("a reset stream starts over", step(stack, 1, false, 7), 7, 7, 7)
	eq("stateless Transform treats a frame as a start", func() []float64 { _ = stack.Transform(frame(5), dst); return dst[:3] }(), 5, 5, 5)

	diff, err := NewImagePreprocessor(space, ImageOptions{FrameDiff: true})
	if err != nil {
		t.Fatal(err)
	}
	eq("first difference is zero", step(diff, 0, true, 10), 0)
	eq("difference", step(diff, 0, false, 25), 15)
	eq("negative difference", step(diff, 0, false, 5), -20)
	eq("new episode's difference is zero", step(diff, 0, true, 200), 0)

	both, err := NewImagePreprocessor(space, ImageOptions{FrameDiff: true, FrameStack: 2})
	if err != nil {
		t.Fatal(err)
	}
	dst = make([]float64, both.Size())
	eq("stacked differences start at zero", step(both, 0, true, 10)[:2], 0, 0)
	eq("stacked differences", step(both, 0, false, 30)[:2], 0, 20)
	eq("stacked differences roll", step(both, 0, false, 35)[:2], 20, 5)
}

func TestImagePreprocessorNoAllocs(t *testing.T) {
	raw := make([]float64, 210*160*3)
	for i := range raw {
		raw[i] = float64(i % 256)
	}
	for _, opts := range []ImageOptions{{Dim: 80, Crop: []int{34, 16, 0, 0}, FrameDiff: true}, {Dim: 42, FrameStack: 4}, {}} {
		p, err := NewImagePreprocessor(pongSpace(), opts)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float64, p.Size())
		for s := range 2 {
			_ = p.TransformStream(s, true, raw, dst)
		}
		k := 0
		if n := testing.AllocsPerRun(20, func() {
			k++
			if err := p.TransformStream(k%2, k%7 == 0, raw, dst); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%+v: %v allocations per observation, want 0", opts, n)
		}
	}
}

func TestImageOptionErrors(t *testing.T) {
	vec := spaces.NewBox(-1, 1, 4)
	for _, tc := range []struct {
		name  string
		space spaces.Space
		opts  ImageOptions
		want  string
	}{
		{"framestack on a vector", vec, ImageOptions{FrameStack: 4}, "framestack 4 needs image observations"},
		{"frame_diff on a vector", vec, ImageOptions{FrameDiff: true}, "frame_diff needs image observations"},
		{"framestack on a discrete space", spaces.Discrete{N: 3}, ImageOptions{FrameStack: 2}, "framestack 2"},
		{"negative framestack", pongSpace(), ImageOptions{FrameStack: -1}, "framestack -1"},
		{"crop too big", pongSpace(), ImageOptions{Crop: []int{200, 10, 0, 0}}, "crop [200 10 0 0]"},
		{"crop of three", pongSpace(), ImageOptions{Crop: []int{1, 2, 3}}, "crop [1 2 3]"},
		{"dim 1", pongSpace(), ImageOptions{Dim: 1}, "dim 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PreprocessorFor("some-env", tc.space, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Options on a vector space that only shape images are ignored.
	if _, err := PreprocessorFor("some-env", vec, ImageOptions{Dim: 42}); err != nil {
		t.Errorf("dim on a vector space: %v", err)
	}
	// The catalog's one-call NewPolicy cannot track episodes per environment.
	_, err := NewPolicy("some-env", pongSpace(), spaces.Discrete{N: 6}, "", ModelOptions{Dim: 42, FrameStack: 2}, 1)
	if err == nil || !strings.Contains(err.Error(), "framestack and frame_diff need") {
		t.Errorf("NewPolicy with framestack: %v", err)
	}
}

func TestImageOptionsDecode(t *testing.T) {
	var o ModelOptions
	if err := json.Unmarshal([]byte(`{"dim": 42, "framestack": 4, "grayscale": false, "crop": [34, 16, 0, 0], "frame_diff": true}`), &o); err != nil {
		t.Fatal(err)
	}
	if o.Dim != 42 || o.FrameStack != 4 || o.Grayscale == nil || *o.Grayscale || len(o.Crop) != 4 || !o.FrameDiff {
		t.Errorf("decoded %+v", o.Image())
	}
	if err := json.Unmarshal([]byte(`{"frame_stack": 4}`), &o); err == nil || !strings.Contains(err.Error(), "framestack") {
		t.Errorf("misspelt key: %v, want an error listing framestack", err)
	}
}

// BenchmarkImagePreprocessor measures turning one PixelPong frame into
// what the conv net reads; the peer copies the raw float64 frame once.
func BenchmarkImagePreprocessor(b *testing.B) {
	raw := make([]float64, 210*160*3)
	for i := range raw {
		raw[i] = float64(i % 256)
	}
	for _, tc := range []struct {
		name string
		opts ImageOptions
	}{
		{"84x84", ImageOptions{}},
		{"42x42-stack4", ImageOptions{Dim: 42, FrameStack: 4}},
		{"80x80-crop-diff", ImageOptions{Dim: 80, Crop: []int{34, 16, 0, 0}, FrameDiff: true}},
		{"40x40-crop-diff-stack2", ImageOptions{Dim: 40, Crop: []int{34, 16, 0, 0}, FrameDiff: true, FrameStack: 2}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p, err := NewImagePreprocessor(pongSpace(), tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]float64, p.Size())
			start := true
			measure(b, func() {
				if err := p.TransformStream(0, start, raw, dst); err != nil {
					b.Fatal(err)
				}
				start = false
			})
		})
	}
	// The same frame as bytes (envs' frame mode), into the PixelPong preset.
	b.Run("40x40-crop-diff-stack2-frame", func(b *testing.B) {
		p, err := NewImagePreprocessor(pongSpace(), ImageOptions{Dim: 40, Crop: []int{34, 16, 0, 0}, FrameDiff: true, FrameStack: 2})
		if err != nil {
			b.Fatal(err)
		}
		frame := make([]uint8, len(raw))
		for i := range frame {
			frame[i] = uint8(raw[i])
		}
		dst := make([]float64, p.Size())
		start := true
		measure(b, func() {
			if err := p.TransformFrame(0, start, frame, dst); err != nil {
				b.Fatal(err)
			}
			start = false
		})
	})
	b.Run("peer-memcpy-frame", func(b *testing.B) {
		dst := make([]float64, len(raw))
		measure(b, func() { copy(dst, raw) })
	})
}

// Grayscaling RGB frames clamps each colour value into [0, 255] before
// averaging (NaN counts as 0), whatever the bin sizes: a bad value cannot
// poison the network nor cancel another one out.
func TestGrayShrinkClampsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  float64
		as   float64 // the value it counts as
	}{
		{"NaN", math.NaN(), 0},
		{"negative", -300, 0},
		{"negative zero", math.Copysign(0, -1), 0},
		{"too large", 1e9, 255},
		{"+Inf", math.Inf(1), 255},
		{"-Inf", math.Inf(-1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 5×3 RGB pixels into 2×2 gray: bins of 2 and 3 rows, 1 and 2 columns.
			space := spaces.NewBox(0, 255, 5, 3, 3)
			obs := make([]float64, 5*3*3)
			for i := range obs {
				obs[i] = float64(i * 5 % 256)
			}
			obs[1], obs[40] = tc.bad, -tc.bad // pixel (0,0) green; pixel (4,1) green
			p, err := NewImagePreprocessor(space, ImageOptions{Dim: 2})
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]float64, p.Size())
			if err := p.Transform(obs, dst); err != nil {
				t.Fatal(err)
			}
			clamp := func(i int) float64 {
				switch {
				case i == 1:
					return tc.as
				case i == 40:
					if math.IsNaN(tc.bad) {
						return 0
					}
					return min(max(-tc.bad, 0), 255)
				}
				return obs[i]
			}
			rows, cols := [][2]int{{0, 2}, {2, 5}}, [][2]int{{0, 1}, {1, 3}}
			for oy, r := range rows {
				for ox, c := range cols {
					sum, n := 0.0, 0
					for y := r[0]; y < r[1]; y++ {
						for x := c[0]; x < c[1]; x++ {
							for ch := range 3 {
								sum += clamp((y*3+x)*3 + ch)
							}
							n++
						}
					}
					want := sum / 3 / float64(n) / 255
					if got := dst[oy*2+ox]; math.Abs(got-want) > 1e-12 {
						t.Errorf("pixel (%d,%d) = %v, want %v", oy, ox, got*255, want*255)
					}
				}
			}
		})
	}
}

// An 8-bit frame gives the same processed observation, to the bit, as the
// same frame widened to float64, for every layout the preprocessor
// handles, over an episode's first and later frames.
func TestTransformFrameMatchesFloat(t *testing.T) {
	colour := false
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name  string
		shape []int
		opts  ImageOptions
	}{
		{"pong-gray-diff-stack2", []int{210, 160, 3}, ImageOptions{Dim: 40, Crop: []int{34, 16, 0, 0}, FrameDiff: true, FrameStack: 2}},
		{"rgb-stack3", []int{30, 24, 3}, ImageOptions{Dim: 7, Grayscale: &colour, FrameStack: 3}},
		{"rgba-gray", []int{20, 20, 4}, ImageOptions{Dim: 6}},
		{"gray-input", []int{21, 19, 1}, ImageOptions{Dim: 5, FrameDiff: true}},
		{"stateless-rgb-gray", []int{50, 40, 3}, ImageOptions{Dim: 11, Crop: []int{3, 2, 1, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			space := spaces.NewBox(0, 255, tc.shape...)
			pf, err := NewImagePreprocessor(space, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			pb, _ := NewImagePreprocessor(space, tc.opts)
			frame := make([]uint8, space.Size())
			wide := make([]float64, space.Size())
			got, want := make([]float64, pf.Size()), make([]float64, pf.Size())
			for step := range 4 {
				for i := range frame {
					frame[i] = uint8(rng.IntN(256))
					wide[i] = float64(frame[i])
				}
				if err := pf.TransformStream(0, step == 0, wide, want); err != nil {
					t.Fatal(err)
				}
				if err := pb.TransformFrame(0, step == 0, frame, got); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("step %d value %d: frame gives %v, float64 %v", step, i, got[i], want[i])
					}
				}
			}
			if err := pb.TransformFrame(0, false, frame[1:], got); err == nil || !strings.Contains(err.Error(), "values, want") {
				t.Errorf("short frame: %v, want an error naming the sizes", err)
			}
		})
	}
}
