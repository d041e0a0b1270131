// Command rl_pong is the Go port of Ray 0.2's "Learning to Play Pong"
// example (Andrej Karpathy's policy-gradient Pong, distributed with remote
// tasks): a two-layer network reads the difference of two preprocessed
// 80×80 frames and outputs the probability of moving up; every batch of
// games, the driver averages their gradients and takes an RMSProp step.
//
//	go run ./examples/rl_pong                       # runs until interrupted
//	go run ./examples/rl_pong --batches 3 --batch-size 2 --max-steps 200
//
// The game is PixelPong-v0 (envs), Gray's Pong in the Atari frame format,
// as Ray 0.2's Pong-v0 is not available here. As in Ray 0.2's example,
// each game is one remote task, compute_gradient, that plays an episode with the
// weights the driver put into the object store once per batch (gray.Put)
// and returns the episode's gradient and its total reward; the environment
// is a reusable variable of each worker process (gray.Reusable), reset
// between tasks. The driver prints the running reward as Ray 0.2's example
// does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
)

// Ray 0.2's example's hyperparameters.
const (
	hidden    = 200     // hidden layer neurons (the default of --hidden)
	gamma     = 0.99    // discount factor for reward
	decayRate = 0.99    // decay factor for RMSProp leaky sum of grad^2
	inputDim  = 80 * 80 // input dimensionality: 80x80 grid
)

// Model is the policy network: h = relu(W1·x), p(up) = sigmoid(W2·h).
// W1 is stored input-major (W1[i*H+j] is the weight from pixel i to hidden
// unit j, H = len(W2)) so that the sparse frame differences read whole rows.
type Model struct {
	W1 []float64
	W2 []float64
}

// newModel initialises the weights as Ray 0.2's example does ("Xavier"
// scaling).
func newModel(seed uint64, hidden int) Model {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b9))
	m := Model{W1: make([]float64, inputDim*hidden), W2: make([]float64, hidden)}
	for i := range m.W1 {
		m.W1[i] = rng.NormFloat64() / math.Sqrt(inputDim)
	}
	for i := range m.W2 {
		m.W2[i] = rng.NormFloat64() / math.Sqrt(float64(hidden))
	}
	return m
}

// pixel is one non-zero entry of a frame difference.
type pixel struct {
	index int32
	value float64
}

// prepro turns a 210×160×3 frame into Ray 0.2's 80×80 binary image: crop
// rows 35–194, keep every second row and column of the red channel, erase
// the two background colours (144 and 109) and set everything else to 1.
func prepro(frame []float64, dst []float64) {
	for y := 0; y < 80; y++ {
		row := (35 + 2*y) * 160 * 3
		for x := 0; x < 80; x++ {
			v := frame[row+2*x*3]
			if v == 144 || v == 109 || v == 0 {
				dst[y*80+x] = 0
			} else {
				dst[y*80+x] = 1
			}
		}
	}
}

// sparseDiff appends the non-zero entries of cur − prev to out.
func sparseDiff(cur, prev []float64, out []pixel) []pixel {
	for i, v := range cur {
		if d := v - prev[i]; d != 0 {
			out = append(out, pixel{int32(i), d})
		}
	}
	return out
}

// forward returns the probability of moving up and the hidden state for
// one (sparse) input.
func (m *Model) forward(x []pixel, h []float64) float64 {
	hidden := len(m.W2)
	clear(h)
	for _, p := range x {
		w := m.W1[int(p.index)*hidden : int(p.index+1)*hidden]
		for j := range h {
			h[j] += p.value * w[j]
		}
	}
	logit := 0.0
	for j := range h {
		h[j] = max(h[j], 0) // ReLU
		logit += m.W2[j] * h[j]
	}
	return 1 / (1 + math.Exp(-logit))
}

// discountRewards computes discounted returns, restarting the sum at each
// point scored (a game boundary in Pong), as Ray 0.2's example does.
func discountRewards(r []float64) []float64 {
	out := make([]float64, len(r))
	running := 0.0
	for t := len(r) - 1; t >= 0; t-- {
		if r[t] != 0 {
			running = 0
		}
		running = running*gamma + r[t]
		out[t] = running
	}
	return out
}

// episodeEnv is a worker's Pong: a one-copy Vector stepped in place.
type episodeEnv struct {
	vec  envs.Vector
	step envs.VectorStep
}

// env is the reusable Pong of each worker process (Ray 0.2's
// ray.reusables.env). Every task resets it with its own seed, so its
// reinitializer has nothing to do.
var env = gray.Reusable("rl_pong.env",
	func() (*episodeEnv, error) {
		v, err := envs.MakeVector("PixelPong-v0", nil, 1)
		if err != nil {
			return nil, err
		}
		return &episodeEnv{vec: v}, nil
	},
	func(e *episodeEnv) (*episodeEnv, error) { return e, nil })

// Task is what one compute_gradient call plays: its seed and the step
// limit of the episode (0: the whole game).
type Task struct {
	Seed     int64
	MaxSteps int
}

// computeGradient plays one episode with the model and returns the
// gradient of the log-likelihood of its actions weighted by their
// standardised discounted returns, and the episode's total reward.
var computeGradient = gray.Func2x2("rl_pong.compute_gradient",
	func(ctx context.Context, model Model, tk Task) (Model, float64, error) {
		e, err := env.Get(ctx)
		if err != nil {
			return Model{}, 0, err
		}
		return rollout(ctx, e, &model, tk)
	})

// rollout plays one episode and computes its policy gradient.
func rollout(ctx context.Context, e *episodeEnv, m *Model, tk Task) (Model, float64, error) {
	rows, err := e.vec.Reset([]int64{tk.Seed})
	if err != nil {
		return Model{}, 0, err
	}
	rng := rand.New(rand.NewPCG(uint64(tk.Seed), 1))
	hidden := len(m.W2)
	cur, prev := make([]float64, inputDim), make([]float64, inputDim)
	prepro(rows[0], prev)
	var (
		xs      [][]pixel   // inputs (sparse)
		hs      [][]float64 // hidden states
		dlogps  []float64   // d log p(action) / d logit
		rewards []float64
		sum     float64
	)
	stepper, inPlace := e.vec.(envs.InPlaceStepper)
	action := [][]float64{{0}}
	for t := 0; tk.MaxSteps == 0 || t < tk.MaxSteps; t++ {
		if t%256 == 0 && ctx.Err() != nil {
			return Model{}, 0, ctx.Err()
		}
		// The input is the difference of the last two frames.
		var obs []float64
		if t == 0 {
			obs = rows[0]
		} else {
			obs = e.step.Obs[0]
		}
		prepro(obs, cur)
		xt := sparseDiff(cur, prev, nil)
		cur, prev = prev, cur
		h := make([]float64, hidden)
		p := m.forward(xt, h)
		y := 0.0 // a "fake label": 1 for up
		action[0][0] = envs.PongLeft
		if rng.Float64() < p {
			y, action[0][0] = 1, envs.PongRight
		}
		xs, hs = append(xs, xt), append(hs, h)
		dlogps = append(dlogps, y-p)
		if inPlace {
			err = stepper.StepInto(action, &e.step)
		} else {
			e.step, err = e.vec.Step(action)
		}
		if err != nil {
			return Model{}, 0, err
		}
		r := e.step.Rewards[0]
		rewards = append(rewards, r)
		sum += r
		if e.step.Terminated[0] || e.step.Truncated[0] {
			break
		}
	}
	// Standardise the discounted returns (Ray 0.2's variance control),
	// then backpropagate through both layers.
	adv := discountRewards(rewards)
	mean, sq := 0.0, 0.0
	for _, a := range adv {
		mean += a
	}
	mean /= float64(len(adv))
	for _, a := range adv {
		sq += (a - mean) * (a - mean)
	}
	std := math.Sqrt(sq / float64(len(adv)))
	g := Model{W1: make([]float64, inputDim*hidden), W2: make([]float64, hidden)}
	dh := make([]float64, hidden)
	for t := range adv {
		a := adv[t] - mean
		if std > 0 {
			a /= std
		}
		d := dlogps[t] * a
		for j, hj := range hs[t] {
			g.W2[j] += d * hj
			dh[j] = 0
			if hj > 0 {
				dh[j] = d * m.W2[j]
			}
		}
		for _, px := range xs[t] {
			row := g.W1[int(px.index)*hidden : int(px.index+1)*hidden]
			for j := range row {
				row[j] += px.value * dh[j]
			}
		}
	}
	return g, sum, nil
}

// Options are the command's flags.
type Options struct {
	BatchSize    int     // episodes per parameter update
	Batches      int     // batches to run (0: until interrupted)
	LearningRate float64 // RMSProp step size
	MaxSteps     int     // step cap per episode (0: whole games)
	Seed         int64
	CPUs         int
	Hidden       int // hidden layer size
}

// train runs the driver loop and prints Ray 0.2's running reward.
func train(ctx context.Context, o Options, out io.Writer) (Model, error) {
	model := newModel(uint64(o.Seed), o.Hidden)
	gradBuffer := Model{W1: make([]float64, len(model.W1)), W2: make([]float64, len(model.W2))}
	cache := Model{W1: make([]float64, len(model.W1)), W2: make([]float64, len(model.W2))}
	var running float64
	haveRunning := false
	episode := 0
	for batch := 1; o.Batches == 0 || batch <= o.Batches; batch++ {
		start := time.Now()
		// Ship the weights once per batch; every task reads that one copy.
		modelRef, err := gray.Put(ctx, model)
		if err != nil {
			return model, err
		}
		grads := make([]gray.Ref[Model], o.BatchSize)
		sums := make([]gray.Ref[float64], o.BatchSize)
		for i := range grads {
			episode++
			grads[i], sums[i] = computeGradient.Remote(modelRef, Task{Seed: o.Seed*1_000_003 + int64(episode), MaxSteps: o.MaxSteps})
		}
		for i := range grads {
			g, err := gray.Get(ctx, grads[i])
			if err != nil {
				return model, fmt.Errorf("batch %d, rollout %d: %w", batch, i, err)
			}
			r, err := gray.Get(ctx, sums[i])
			if err != nil {
				return model, err
			}
			add(gradBuffer.W1, g.W1)
			add(gradBuffer.W2, g.W2)
			if haveRunning {
				running = running*0.99 + r*0.01
			} else {
				running, haveRunning = r, true
			}
			fmt.Fprintf(out, "episode reward total was %.0f. running mean: %.6f\n", r, running)
		}
		rmsprop(model.W1, gradBuffer.W1, cache.W1, o.LearningRate)
		rmsprop(model.W2, gradBuffer.W2, cache.W2, o.LearningRate)
		fmt.Fprintf(out, "Batch %d computed %d rollouts in %.2f seconds, running mean is %.6f\n",
			batch, o.BatchSize, time.Since(start).Seconds(), running)
		if ctx.Err() != nil {
			return model, nil
		}
	}
	return model, nil
}

func add(dst, src []float64) {
	for i, v := range src {
		dst[i] += v
	}
}

// rmsprop takes an ascent step on the summed gradient g (Ray 0.2's
// example maximises the expected reward), then clears g.
func rmsprop(w, g, cache []float64, lr float64) {
	for i, gi := range g {
		cache[i] = decayRate*cache[i] + (1-decayRate)*gi*gi
		w[i] += lr * gi / (math.Sqrt(cache[i]) + 1e-5)
		g[i] = 0
	}
}

func main() {
	gray.ServeIfWorker()
	var o Options
	flag.IntVar(&o.BatchSize, "batch-size", 10, "episodes per parameter update")
	flag.IntVar(&o.Batches, "batches", 0, "number of batches (0: until interrupted)")
	flag.Float64Var(&o.LearningRate, "learning-rate", 1e-4, "RMSProp learning rate")
	flag.IntVar(&o.MaxSteps, "max-steps", 0, "cap on steps per episode (0: whole games to 21)")
	flag.Int64Var(&o.Seed, "seed", 0, "seed of the weights and the games")
	flag.IntVar(&o.Hidden, "hidden", hidden, "hidden layer size")
	flag.IntVar(&o.CPUs, "num-cpus", 0, "CPUs for the runtime, i.e. rollouts in parallel (0: all)")
	flag.Parse()
	if err := o.check(); err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := gray.Init(ctx, gray.Options{NumCPUs: o.CPUs, NoGPUs: true}); err != nil {
		log.Fatal(err)
	}
	defer gray.Shutdown()
	if _, err := train(ctx, o, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

func (o Options) check() error {
	switch {
	case o.Hidden < 1:
		return fmt.Errorf("--hidden must be at least 1, got %d", o.Hidden)
	case o.BatchSize < 1:
		return fmt.Errorf("--batch-size must be at least 1, got %d", o.BatchSize)
	case o.Batches < 0:
		return fmt.Errorf("--batches must be 0 (no limit) or more, got %d", o.Batches)
	case o.MaxSteps < 0:
		return fmt.Errorf("--max-steps must be 0 (no cap) or more, got %d", o.MaxSteps)
	case !(o.LearningRate > 0):
		return fmt.Errorf("--learning-rate must be positive, got %v", o.LearningRate)
	}
	return nil
}
