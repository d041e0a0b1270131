// Command paramserver is the Go port of Ray 0.2's parameter-server
// examples (sections 1.14.1 and 1.14.2): workers fit a linear regression
// whose weights live in a parameter server sharded over several actors.
//
//	go run ./examples/paramserver --mode=async --num-workers=4
//	go run ./examples/paramserver --mode=sync --num-workers=4 --num-shards=2
//
// In async mode each worker is a task that loops: pull the weights, compute
// a gradient on its own data, push it; the servers apply pushes as they
// arrive. In sync mode the driver puts the weights into the object store
// once per step, every worker computes a gradient from that one copy, and
// the servers average the gradients and take one step together.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib/paramserver"
)

// The model: y = Σ_k w_k·x_k + b, with the features split into blocks, one
// key per block, so the keys can be sharded.
const (
	blocks    = 4
	blockSize = 64
	batchSize = 32
)

func key(k int) string { return fmt.Sprintf("w%d", k) }

// truth is the weights the data is generated from.
func truth() paramserver.Named {
	rng := rand.New(rand.NewPCG(42, 0))
	n := paramserver.Named{"b": {rng.NormFloat64()}}
	for k := 0; k < blocks; k++ {
		v := make([]float64, blockSize)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		n[key(k)] = v
	}
	return n
}

// zeros is the initial model.
func zeros() paramserver.Named {
	n := paramserver.Named{"b": {0}}
	for k := 0; k < blocks; k++ {
		n[key(k)] = make([]float64, blockSize)
	}
	return n
}

// batch draws a minibatch of (x, y) pairs; each worker has its own stream.
func batch(rng *rand.Rand, w paramserver.Named) ([][]float64, []float64) {
	xs := make([][]float64, batchSize)
	ys := make([]float64, batchSize)
	for i := range xs {
		x := make([]float64, blocks*blockSize)
		for j := range x {
			x[j] = rng.NormFloat64()
		}
		xs[i] = x
		ys[i] = predict(w, x) + 0.1*rng.NormFloat64()
	}
	return xs, ys
}

func predict(w paramserver.Named, x []float64) float64 {
	y := w["b"][0]
	for k := 0; k < blocks; k++ {
		for i, wi := range w[key(k)] {
			y += wi * x[k*blockSize+i]
		}
	}
	return y
}

// gradient of the mean squared error, and the loss.
func gradient(w paramserver.Named, xs [][]float64, ys []float64) (paramserver.Named, float64) {
	g := zeros()
	var loss float64
	for i, x := range xs {
		e := predict(w, x) - ys[i]
		loss += e * e / float64(len(xs))
		s := 2 * e / float64(len(xs))
		g["b"][0] += s
		for k := 0; k < blocks; k++ {
			for j := range g[key(k)] {
				g[key(k)][j] += s * x[k*blockSize+j]
			}
		}
	}
	return g, loss
}

// distance is the Euclidean distance of w from the true weights.
func distance(w paramserver.Named) float64 {
	var d float64
	for k, v := range truth() {
		for i := range v {
			d += (w[k][i] - v[i]) * (w[k][i] - v[i])
		}
	}
	return math.Sqrt(d)
}

// asyncWorker is Ray 0.2's worker_task: pull, compute, push, repeatedly.
var asyncWorker = gray.Func3("paramserver-example.async_worker",
	func(ctx context.Context, ps paramserver.Client, index, steps int) (float64, error) {
		rng := rand.New(rand.NewPCG(uint64(index), 1))
		target := truth()
		var loss float64
		for s := 0; s < steps; s++ {
			w, err := ps.Pull(ctx)
			if err != nil {
				return 0, err
			}
			xs, ys := batch(rng, target)
			var g paramserver.Named
			g, loss = gradient(w, xs, ys)
			if err := ps.Push(ctx, g); err != nil {
				return 0, err
			}
		}
		return loss, nil
	})

// computeGradient is the sync workers' compute_gradients: one minibatch
// gradient at the weights the driver put into the object store.
var computeGradient = gray.Func3("paramserver-example.compute_gradients",
	func(ctx context.Context, w paramserver.Named, index, step int) (paramserver.Named, error) {
		rng := rand.New(rand.NewPCG(uint64(index), uint64(step)))
		xs, ys := batch(rng, truth())
		g, _ := gradient(w, xs, ys)
		return g, nil
	})

func main() {
	gray.ServeIfWorker()
	mode := flag.String("mode", "async", `"async" (section 1.14.1) or "sync" (section 1.14.2)`)
	workers := flag.Int("num-workers", 4, "number of workers")
	shards := flag.Int("num-shards", 2, "number of parameter-server actors the keys are sharded over")
	steps := flag.Int("steps", 100, "steps: per worker in async mode, in all in sync mode")
	lr := flag.Float64("lr", 0.02, "SGD learning rate on the servers")
	cpus := flag.Int("num-cpus", 0, "CPUs for the runtime (0: all)")
	flag.Parse()
	if *mode != "async" && *mode != "sync" {
		log.Fatalf("--mode must be async or sync, got %q", *mode)
	}
	if *workers < 1 || *steps < 1 {
		log.Fatal("--num-workers and --steps must be at least 1")
	}
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: *cpus, NoGPUs: true}); err != nil {
		log.Fatal(err)
	}
	defer gray.Shutdown()

	ps, err := paramserver.New(ctx, paramserver.Config{
		Shards: *shards,
		Server: paramserver.ServerConfig{Optimizer: paramserver.OptSGD, LR: *lr},
	}, zeros())
	if err != nil {
		log.Fatal(err)
	}
	defer ps.Close()
	fmt.Printf("%s parameter server: %d workers, %d shards, distance to the true weights %.4f\n",
		*mode, *workers, *shards, distance(zeros()))

	if *mode == "async" {
		refs := make([]gray.Ref[float64], *workers)
		for i := range refs {
			refs[i] = asyncWorker.Remote(*ps, i, *steps)
		}
		losses, err := gray.GetAll(ctx, refs)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("workers' last minibatch losses: %.4f\n", losses)
	} else {
		for s := 1; s <= *steps; s++ {
			w, err := ps.Pull(ctx)
			if err != nil {
				log.Fatal(err)
			}
			wref, err := gray.Put(ctx, w) // once per step, read by every worker
			if err != nil {
				log.Fatal(err)
			}
			grads := make([]gray.Ref[paramserver.Named], *workers)
			for i := range grads {
				grads[i] = computeGradient.Remote(wref, i, s)
			}
			if err := ps.ApplyGradients(ctx, grads); err != nil {
				log.Fatal(err)
			}
			if s%20 == 0 || s == *steps {
				w, err := ps.Pull(ctx)
				if err != nil {
					log.Fatal(err)
				}
				fmt.Printf("step %d: distance to the true weights %.4f\n", s, distance(w))
			}
		}
	}
	w, err := ps.Pull(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("final distance to the true weights %.4f\n", distance(w))
}
