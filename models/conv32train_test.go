package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// precModes are the float32 training variants to check: the portable
// loops (under -race only where there are no AVX-512 kernels), the
// AVX-512 kernels where the CPU has them.
func precModes() map[string]convPrecision {
	m := map[string]convPrecision{}
	if !raceEnabled || !haveAVX512 {
		m["portable"] = prec32Portable
	}
	if haveAVX512 {
		m["avx512"] = precAuto
	}
	return m
}

// convTrainCases are networks for the float32 training checks: the
// catalog's default stacks, a custom stack with several channels, strides
// 1, 2 and 3, "valid" and "same" padding, kernels the stride does not
// divide and a depth beyond one kc32 slice, and a single layer whose kernel
// covers the image.
var convTrainCases = []struct {
	name    string
	shape   []int
	filters []ConvFilter
	batches []int
}{
	{"default42", []int{42, 42, 1}, nil, []int{1, 9}},
	{"default84x4", []int{84, 84, 4}, nil, []int{2}},
	{"custom", []int{20, 17, 3}, []ConvFilter{{8, 3, 3, 1, false}, {40, 5, 4, 2, true}, {33, 3, 3, 2, false}, {5, 3, 2, 1, true}}, []int{1, 70}},
	{"stride3", []int{13, 11, 2}, []ConvFilter{{6, 5, 5, 3, false}, {7, 2, 3, 1, true}}, []int{2, 5}},
	{"whole", []int{6, 5, 2}, []ConvFilter{{7, 6, 5, 1, true}}, []int{1, 3, 70}},
}

// newConvPair builds the same network (same seed, so the same weights,
// and the same non-zero biases) in float64 and in precision prec.
func newConvPair(t *testing.T, shape []int, filters []ConvFilter, prec convPrecision) (ref, m *ConvNet) {
	t.Helper()
	build := func(f64 bool, init Init) *ConvNet {
		opts := DefaultModelOptions()
		opts.Value = true
		opts.ConvFilters = filters
		opts.ConvFloat64 = f64
		opts.Init = init
		n, err := NewConvNet(shape, 6, opts, 5)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ref = build(true, InitNameOrthogonal)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, l := range ref.convs {
		for i := range l.bias.Data {
			l.bias.Data[i] = 0.1 * rng.NormFloat64()
		}
	}
	// The same weights, without a second (slow) orthogonal initialisation.
	m = build(false, InitNameNormc)
	if err := m.Params().SetFlat(ref.Params().Flat()); err != nil {
		t.Fatal(err)
	}
	m.prec = prec
	return ref, m
}

// linearLoss is Σ out·wOut + Σ value·wValue for fixed weights: every
// output gets a different gradient.
func linearLoss(tape *Tape, m Model, batch int, obs, wts []float64) *Tensor {
	o := m.Forward(tape, tape.Const(batch, m.NumInputs(), obs))
	out := tape.Concat(o.Out, o.Value)
	return tape.Sum(tape.Mul(out, tape.Const(out.Rows, out.Cols, wts[:out.Len()])))
}

// TestConvNetFloat32TrainingMatchesFloat64 checks the float32 training
// path (the portable loops, and the AVX-512 kernels where present)
// against the float64 path on the same weights: outputs and every
// parameter's gradient, tensor by tensor, to float32 rounding relative to
// the tensor's gradient norm, twice on one tape (the second step reuses
// the first's buffers).
func TestConvNetFloat32TrainingMatchesFloat64(t *testing.T) {
	for _, tc := range convTrainCases {
		ref, m := newConvPair(t, tc.shape, tc.filters, precAuto)
		for mode, prec := range precModes() {
			m.prec = prec
			in := m.NumInputs()
			rng := rand.New(rand.NewPCG(7, 7))
			for _, batch := range tc.batches {
				t.Run(fmt.Sprintf("%s/%s/batch=%d", mode, tc.name, batch), func(t *testing.T) {
					obs, wts := make([]float64, batch*in), make([]float64, batch*7)
					for i := range obs {
						obs[i] = rng.Float64()
					}
					for i := range wts {
						wts[i] = rng.NormFloat64()
					}
					refTape, tape := NewTape(), NewTape()
					ref.Params().ZeroGrad()
					refTape.Backward(linearLoss(refTape, ref, batch, obs, wts))
					for step := range 2 {
						tape.Reset()
						m.Params().ZeroGrad()
						loss := linearLoss(tape, m, batch, obs, wts)
						if step == 0 && (tape.nodes[0].op != opLeaf || tape.nodes[1].op != opConv32) {
							t.Fatalf("the forward pass did not take the float32 path")
						}
						tape.Backward(loss)
						compareClose(t, "loss", loss.Data, refTape.nodes[refTape.Len()-1].out.Data, 1e-4)
						for i, p := range m.Params().Tensors() {
							compareGrads(t, m.Params().Names()[i], p.Grad, ref.Params().Tensors()[i].Grad, 1e-4)
						}
					}
				})
			}
		}
	}
}

// compareGrads fails when got and want differ by more than tol times
// want's largest magnitude (float32 sums of many terms carry that much
// relative error, spread over the tensor).
func compareGrads(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	scale := 0.0
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*scale+1e-12 {
			t.Fatalf("%s gradient [%d] = %v, float64 path %v (largest %v)", what, i, got[i], want[i], scale)
		}
	}
}

// TestConvNetFloat32TrainingGradients checks the float32 path's
// gradients against central finite differences of its own loss, for
// every weight of a small network with two strided layers and a valid
// one. The step (1e-3) is large enough for float32 rounding of the loss
// to matter little and small enough for few ReLU kinks to be crossed.
func TestConvNetFloat32TrainingGradients(t *testing.T) {
	for mode, prec := range precModes() {
		t.Run(mode, func(t *testing.T) {
			_, m := newConvPair(t, []int{9, 8, 2}, []ConvFilter{{4, 3, 3, 2, false}, {6, 3, 2, 2, false}, {5, 2, 2, 1, true}}, prec)
			const batch = 3
			in := m.NumInputs()
			rng := rand.New(rand.NewPCG(8, 8))
			obs, wts := make([]float64, batch*in), make([]float64, batch*7)
			for i := range obs {
				obs[i] = rng.NormFloat64()
			}
			for i := range wts {
				wts[i] = rng.NormFloat64()
			}
			tape := NewTape()
			loss := func() *Tensor {
				tape.Reset()
				return linearLoss(tape, m, batch, obs, wts)
			}
			p := m.Params()
			p.ZeroGrad()
			tape.Backward(loss())
			analytic := p.GetFlatGrad(nil)
			w := p.Flat()
			const h = 1e-3
			bad := 0
			for i := range w {
				orig := w[i]
				w[i] = orig + h
				up := loss().Item()
				w[i] = orig - h
				down := loss().Item()
				w[i] = orig
				if num := (up - down) / (2 * h); math.Abs(num-analytic[i]) > 2e-3*(1+math.Abs(num)) {
					bad++
					t.Logf("parameter %d: analytic %v numeric %v", i, analytic[i], num)
				}
			}
			// A parameter whose step crosses a ReLU kink may differ.
			if bad > len(w)/100 {
				t.Fatalf("%d of %d gradients differ from finite differences", bad, len(w))
			}
		})
	}
}

// TestGemm32TMatchesFloat64 checks the product with A transposed (the
// AVX-512 kernels where present, and the portable loop) against float64
// sums: leftover rows and masked columns, both loop orders (at most
// smallM rows and more) and depths beyond one slice of kc32, with strides
// wider than the operands.
func TestGemm32TMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	modes := []bool{false}
	if haveAVX512 {
		modes = append(modes, true)
	}
	for _, asm := range modes {
		for _, sh := range [][3]int{{1, 1, 1}, {8, 32, 3}, {7, 19, 5}, {16, 128, 700}, {65, 16, 16}, {3, 33, 600}, {200, 70, 1}, {97, 256, 33}, {40, 64, 1100}} {
			m, n, k := sh[0], sh[1], sh[2]
			t.Run(fmt.Sprintf("asm=%v/%dx%dx%d", asm, m, n, k), func(t *testing.T) {
				lda, ldb, ldc := m+2, n+1, n+3
				a, b, c := fill(k*lda), fill(k*ldb), fill(m*ldc)
				c0 := append([]float32(nil), c...)
				gemm32T(asm, m, n, k, a, lda, b, ldb, c, ldc)
				for i := 0; i < m; i++ {
					for j := 0; j < ldc; j++ {
						got := c[i*ldc+j]
						if j >= n {
							if got != c0[i*ldc+j] {
								t.Fatalf("c[%d][%d] beyond the %d columns changed", i, j, n)
							}
							continue
						}
						want, mag := float64(c0[i*ldc+j]), math.Abs(float64(c0[i*ldc+j]))
						for l := 0; l < k; l++ {
							p := float64(a[l*lda+i]) * float64(b[l*ldb+j])
							want += p
							mag += math.Abs(p)
						}
						if math.Abs(float64(got)-want) > 1e-5*mag+1e-30 {
							t.Fatalf("c[%d][%d] = %v, float64 %v (Σ|a·b| %v)", i, j, got, want, mag)
						}
					}
				}
			})
		}
	}
}

// TestConvNetFloat32TrainingAllocatesNothing checks that after its first
// step the float32 training path reuses the tape's buffers.
func TestConvNetFloat32TrainingAllocatesNothing(t *testing.T) {
	if !haveAVX512 {
		t.Skip("float32 training is the default only with AVX-512")
	}
	m := newDefaultConvNet42(t)
	obs := randImages(8)
	tape, p := NewTape(), m.Params()
	step := func() {
		tape.Reset()
		o := m.Forward(tape, tape.Const(8, 42*42, obs))
		p.ZeroGrad()
		tape.Backward(tape.Add(tape.Mean(tape.Square(o.Out)), tape.Mean(tape.Square(o.Value))))
	}
	step()
	if n := testing.AllocsPerRun(5, step); n != 0 {
		t.Fatalf("a training step allocates %v times after the first", n)
	}
}

// TestConvNetFloat32LearnsAsFloat64 trains the same small ConvNet (same
// initial weights, same batches) with float32 and float64 convolutions on
// a task that needs them, telling which quadrant of a noisy 21×21 image
// holds a bright 5×5 square: both must learn it (accuracy on held-out
// images above 90%, from 25% by chance) and their final losses must be
// close.
func TestConvNetFloat32LearnsAsFloat64(t *testing.T) {
	const side, batch, steps = 21, 32, 40
	sample := func(rng *rand.Rand, n int) (obs, labels []float64) {
		obs, labels = make([]float64, n*side*side), make([]float64, n)
		for i := 0; i < n; i++ {
			img := obs[i*side*side : (i+1)*side*side]
			for j := range img {
				img[j] = 0.3 * rng.Float64()
			}
			y, x := rng.IntN(side-5), rng.IntN(side-5)
			for dy := 0; dy < 5; dy++ {
				for dx := 0; dx < 5; dx++ {
					img[(y+dy)*side+x+dx] = 1
				}
			}
			q := 0
			if 2*y+5 > side {
				q += 2
			}
			if 2*x+5 > side {
				q++
			}
			labels[i] = float64(q)
		}
		return obs, labels
	}
	for mode, prec := range precModes() {
		t.Run(mode, func(t *testing.T) {
			var losses [2]float64
			var accs [2]float64
			for k, p := range []convPrecision{prec64, prec} {
				opts := ModelOptions{Hiddens: []int{32}, Activation: "relu",
					ConvFilters: []ConvFilter{{8, 4, 4, 2, false}, {16, 3, 3, 2, false}}}
				m, err := NewConvNet([]int{side, side, 1}, 4, opts, 3)
				if err != nil {
					t.Fatal(err)
				}
				m.prec = p
				rng := rand.New(rand.NewPCG(11, 12))
				tape, opt, params := NewTape(), NewAdam(3e-3), m.Params()
				xent := func(obs, labels []float64, n int) *Tensor {
					o := m.Forward(tape, tape.Const(n, side*side, obs))
					return tape.Neg(tape.Mean(tape.Gather(tape.LogSoftmax(o.Out), tape.Const(n, 1, labels))))
				}
				for range steps {
					obs, labels := sample(rng, batch)
					tape.Reset()
					loss := xent(obs, labels, batch)
					params.ZeroGrad()
					tape.Backward(loss)
					if err := opt.Step(params.Flat(), params.Grads()); err != nil {
						t.Fatal(err)
					}
				}
				obs, labels := sample(rng, 200)
				tape.Reset()
				tape.SetNoGrad(true)
				o := m.Forward(tape, tape.Const(200, side*side, obs))
				right := 0
				for i := 0; i < 200; i++ {
					best := 0
					for j := range 4 {
						if o.Out.At(i, j) > o.Out.At(i, best) {
							best = j
						}
					}
					if float64(best) == labels[i] {
						right++
					}
				}
				tape.SetNoGrad(false)
				tape.Reset()
				losses[k], accs[k] = xent(obs, labels, 200).Item(), float64(right)/200
			}
			t.Logf("held-out loss %.4f (float64) %.4f (%s); accuracy %.3f, %.3f", losses[0], losses[1], mode, accs[0], accs[1])
			for k, acc := range accs {
				if acc < 0.9 {
					t.Errorf("accuracy %.3f with %v convolutions, want above 0.9", acc, []string{"float64", mode}[k])
				}
			}
			if math.Abs(losses[0]-losses[1]) > 0.1*max(losses[0], 0.05) {
				t.Errorf("held-out loss %.4f with float32, %.4f with float64", losses[1], losses[0])
			}
		})
	}
}
