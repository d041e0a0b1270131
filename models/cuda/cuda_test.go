package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gray-ml/gray/models"
)

// openOrSkip opens GPU 0, or skips the test saying why this machine has
// none ("no CUDA driver: libcuda.so.1 not found ...").
func openOrSkip(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	if IsUnavailable(err) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Logf("device: %s", d)
	return d
}

func upload(t *testing.T, d *Device, v []float64) *Buffer {
	t.Helper()
	b, err := d.Alloc("a test buffer", len(v))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Free() })
	if err := b.Upload(0, v); err != nil {
		t.Fatal(err)
	}
	return b
}

func download(t *testing.T, b *Buffer, n int) []float64 {
	t.Helper()
	out := make([]float64, n)
	if err := b.Download(0, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// near fails unless every got[i] is within tol·(1 + |want[i]|·scale-free)
// of want[i]: an absolute tolerance relative to the largest |want|, which
// is how float32 rounding of sums shows.
func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1e-6
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*scale) {
			t.Fatalf("%s[%d] = %.7g, the CPU path gives %.7g (|diff| %.3g > %.3g = tol %.0e × max|value| %.3g)", what, i, got[i], want[i], d, tol*scale, tol, scale)
		}
	}
}

func randVec(rng *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * rng.NormFloat64()
	}
	return v
}

// The one test that runs everywhere: without a GPU, Open says why and how
// to go on, and wraps ErrUnavailable.
func TestOpenWithoutGPUSaysWhy(t *testing.T) {
	d, err := Open(0)
	if err == nil {
		_ = d.Close()
		t.Skip("this machine has a GPU: the error path is tested on machines without one")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open without a GPU: %v; want an error wrapping ErrUnavailable", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "num_gpus: 0") {
		t.Fatalf("Open without a GPU: %q; want one line naming the way out (num_gpus: 0)", msg)
	}
	// A second Open gives the same answer (the libraries load once).
	if _, err2 := Open(0); err2 == nil || err2.Error() != msg {
		t.Fatalf("second Open: %v, first: %v", err2, err)
	}
}

func TestGemmMatchesCPU(t *testing.T) {
	d := openOrSkip(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const m, n, k = 37, 29, 53
	for _, tc := range []struct{ ta, tb bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		a, b, c := randVec(rng, m*k, 1), randVec(rng, k*n, 1), randVec(rng, m*n, 1)
		at := func(i, j int) float64 { // op(A)[i][j]
			if tc.ta {
				return a[j*m+i]
			}
			return a[i*k+j]
		}
		bt := func(i, j int) float64 {
			if tc.tb {
				return b[j*k+i]
			}
			return b[i*n+j]
		}
		want := make([]float64, m*n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				s := 0.5 * c[i*n+j]
				for p := 0; p < k; p++ {
					s += 2 * at(i, p) * bt(p, j)
				}
				want[i*n+j] = s
			}
		}
		ga, gb, gc := upload(t, d, a), upload(t, d, b), upload(t, d, c)
		if err := d.enter(); err != nil {
			t.Fatal(err)
		}
		err := d.gemm(tc.ta, tc.tb, m, n, k, 2, ga.ptr, gb.ptr, 0.5, gc.ptr)
		d.leave()
		if err != nil {
			t.Fatal(err)
		}
		near(t, "gemm", download(t, gc, m*n), want, 1e-5)
	}
	// Strided batched: three independent products.
	const count = 3
	a, b := randVec(rng, count*m*k, 1), randVec(rng, count*k*n, 1)
	want := make([]float64, count*m*n)
	for q := 0; q < count; q++ {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				s := 0.0
				for p := 0; p < k; p++ {
					s += a[q*m*k+i*k+p] * b[q*k*n+p*n+j]
				}
				want[q*m*n+i*n+j] = s
			}
		}
	}
	ga, gb, gc := upload(t, d, a), upload(t, d, b), upload(t, d, make([]float64, count*m*n))
	if err := d.enter(); err != nil {
		t.Fatal(err)
	}
	err := d.gemmBatched(false, false, m, n, k, 1, ga.ptr, m*k, gb.ptr, k*n, 0, gc.ptr, m*n, count)
	d.leave()
	if err != nil {
		t.Fatal(err)
	}
	near(t, "gemmBatched", download(t, gc, count*m*n), want, 1e-5)
}

// netCases are the networks whose forward and backward passes are
// checked against the CPU path: every layer kind, both activations,
// shared and separate value functions, padded convolutions (col2im
// into a conv's input) and a whole-image kernel.
var netCases = []struct {
	name  string
	shape []int
	opts  func(o *models.ModelOptions)
	outs  int
}{
	{"fc tanh", []int{11}, func(o *models.ModelOptions) { o.Hiddens = []int{32, 16} }, 5},
	{"fc relu shared value", []int{9}, func(o *models.ModelOptions) {
		o.Hiddens, o.Activation, o.VFShareLayers = []int{24}, "relu", true
	}, 3},
	{"fc no hidden", []int{6}, func(o *models.ModelOptions) { o.Hiddens = nil }, 4},
	{"pixelpong conv", []int{40, 40, 2}, func(o *models.ModelOptions) {
		o.ConvFilters = []models.ConvFilter{{Out: 16, KH: 4, KW: 4, Stride: 4, Valid: true}}
		o.Hiddens, o.Activation = []int{128}, "relu"
	}, 7},
	{"padded convs and a whole-image kernel", []int{10, 9, 3}, func(o *models.ModelOptions) {
		o.ConvFilters = []models.ConvFilter{{Out: 4, KH: 3, KW: 3, Stride: 2}, {Out: 5, KH: 2, KW: 2, Stride: 1}, {Out: 6, KH: 5, KW: 5, Stride: 1, Valid: true}}
		o.Hiddens = []int{8}
	}, 3},
}

func newModel(t *testing.T, shape []int, outs int, set func(*models.ModelOptions)) models.Model {
	t.Helper()
	o := models.DefaultModelOptions()
	o.Value, o.ConvFloat64 = true, true
	set(&o)
	m, err := models.NewModel(shape, outs, o, 7)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNetMatchesCPU(t *testing.T) {
	d := openOrSkip(t)
	for _, tc := range netCases {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, tc.shape, tc.outs, tc.opts)
			rng := rand.New(rand.NewPCG(3, 4))
			const rows = 13
			in := m.NumInputs()
			x := randVec(rng, rows*in, 1)
			r1, r2 := randVec(rng, rows*tc.outs, 1), randVec(rng, rows, 1)

			tape := models.NewTape()
			o := m.Forward(tape, tape.Const(rows, in, x))
			loss := tape.Add(tape.Sum(tape.Mul(o.Out, tape.Const(rows, tc.outs, r1))), tape.Sum(tape.Mul(o.Value, tape.Const(rows, 1, r2))))
			m.Params().ZeroGrad()
			tape.Backward(loss)

			net, err := NewNet(d, m, rows+3)
			if err != nil {
				t.Fatal(err)
			}
			defer net.Close()
			if err := net.Input().Upload(0, x); err != nil {
				t.Fatal(err)
			}
			if err := net.Forward(rows); err != nil {
				t.Fatal(err)
			}
			near(t, "out", download(t, net.Out(), rows*tc.outs), o.Out.Data, 1e-5)
			near(t, "value", download(t, net.Value(), rows), o.Value.Data, 1e-5)
			if err := net.ZeroGrad(); err != nil {
				t.Fatal(err)
			}
			if err := net.Backward(rows, upload(t, d, r1), upload(t, d, r2)); err != nil {
				t.Fatal(err)
			}
			g, err := net.Grads(nil)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "gradient", g, m.Params().Grads(), 1e-4)
			w, err := net.Weights(nil)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "weights round trip", w, m.Params().Flat(), 1e-7)
		})
	}
}

func TestNoKernelModels(t *testing.T) {
	o := models.DefaultModelOptions()
	o.UseLSTM = true
	lstm, err := models.NewModel([]int{4}, 2, o, 1)
	if err != nil {
		t.Fatal(err)
	}
	o = models.DefaultModelOptions()
	o.FreeLogStd = true
	gauss, err := models.NewModel([]int{4}, 4, o, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    models.Model
		want string
	}{{lstm, "LSTM"}, {gauss, "free_log_std"}} {
		// The model is checked before any GPU work, so this runs
		// everywhere.
		_, err := NewNet(nil, tc.m, 4)
		var nk *models.NoDeviceKernelError
		if !errors.As(err, &nk) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "num_gpus: 0") {
			t.Fatalf("NewNet(%T): %v; want a NoDeviceKernelError naming %s and num_gpus: 0", tc.m, err, tc.want)
		}
	}
}

func TestOutOfMemorySaysSizes(t *testing.T) {
	d := openOrSkip(t)
	free, total, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Alloc("a test buffer", int(total/4)+(1<<28))
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || oom.Asked <= total || oom.All != total || !strings.Contains(err.Error(), "free") {
		t.Fatalf("allocating more than the GPU has (%d bytes, %d free): %v; want an OutOfMemoryError with the sizes", total, free, err)
	}
}
