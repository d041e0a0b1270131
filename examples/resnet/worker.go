package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/datasets/fashionmnist"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/paramserver"
	"golang.org/x/sys/unix"
)

// Metric keys ride along with the gradients in the Named a worker returns.
// They start with "." so they can never be a weight's name; the parameter
// servers read only the keys they hold.
const (
	keyLoss    = ".loss"
	keyCorrect = ".correct"
	keySeconds = ".seconds"
	keyCPU     = ".cpu"
)

// WorkerSpec tells a worker what to build and which data to hold.
type WorkerSpec struct {
	Dir          string
	Index, Count int
	TrainLimit   int
	TestLimit    int
	// Batch is this worker's slice of each global batch.
	Batch int
	Net   models.ResNetConfig
	Seed  uint64
	// WeightDecay is added to each gradient as WeightDecay·w (SGD's L2
	// penalty, applied here because the servers run plain momentum SGD).
	WeightDecay float64
	// Threads splits each of the worker's batches into that many fixed
	// parts computed together on copies of the network (0 is taken as 1).
	// Each part is normalised with its own batch statistics, so the
	// gradients depend on Threads (and on nothing else about the machine);
	// the running statistics are merged after each step
	// (models.MergeRunningStats).
	Threads int
}

// Worker is a training actor: it holds its shard of the training set (and
// the test set, for evaluation), a replica of the network, and computes
// gradients on its slice of each global batch.
type Worker struct {
	spec    WorkerSpec
	net     *models.ResNet
	byName  map[string]*models.Tensor
	batches *fashionmnist.Batches
	test    *fashionmnist.Set
	gpus    []int
	// team runs the parts of a batch on nets (nets[0] is net; the others
	// share its weights) through reps.
	team    *models.Team
	nets    []*models.ResNet
	reps    *models.Replicas
	norms   [][]*models.BatchNorm // each net's BatchNorms
	correct []int                 // each part's correct predictions
	// view holds the weights the servers shipped last, read in place in
	// the object store.
	view paramserver.View
}

// NewWorker loads the data and builds the replica.
func NewWorker(ctx context.Context, spec WorkerSpec) (*Worker, error) {
	train, err := fashionmnist.LoadSplitN(spec.Dir, "train", spec.TrainLimit)
	if err != nil {
		return nil, err
	}
	shard := train.Shard(spec.Index, spec.Count)
	if shard.Len() == 0 || spec.Batch < 1 {
		return nil, fmt.Errorf("resnet: worker %d of %d holds %d training images for batches of %d; use fewer workers or a larger batch", spec.Index, spec.Count, shard.Len(), spec.Batch)
	}
	test, err := fashionmnist.LoadSplitN(spec.Dir, "test", spec.TestLimit)
	if err != nil {
		return nil, err
	}
	net, err := models.NewResNet(spec.Net, spec.Seed)
	if err != nil {
		return nil, err
	}
	w := &Worker{spec: spec, net: net, byName: map[string]*models.Tensor{}, test: test,
		batches: shard.Batches(spec.Batch, spec.Seed^uint64(spec.Index+1)*0x9e3779b97f4a7c15), gpus: gray.GPUIDs(ctx)}
	p := net.Params()
	for i, name := range p.Names() {
		w.byName[name] = p.Tensors()[i]
	}
	if err := w.split(max(1, spec.Threads)); err != nil {
		return nil, err
	}
	return w, nil
}

// close stops the worker's team (a worker actor's team ends with its
// process when the actor is killed; tests that build a Worker in place
// close it).
func (w *Worker) close() { w.team.Close() }

// split makes the team and the network's copies for threads parts.
func (w *Worker) split(threads int) error {
	w.team = models.NewTeam(threads)
	w.nets = []*models.ResNet{w.net}
	var copies []*models.Params
	for len(w.nets) < threads {
		c, err := models.NewResNet(w.spec.Net, w.spec.Seed)
		if err != nil {
			w.team.Close()
			return err
		}
		w.nets = append(w.nets, c)
		copies = append(copies, c.Params())
	}
	reps, err := models.NewReplicas(w.team, w.net.Params(), copies)
	if err != nil {
		w.team.Close()
		return err
	}
	w.reps = reps
	for _, n := range w.nets {
		w.norms = append(w.norms, n.BatchNorms())
	}
	w.correct = make([]int, threads)
	return nil
}

// Info says where the worker runs.
func (w *Worker) Info(ctx context.Context) (string, error) {
	if len(w.gpus) > 0 {
		return fmt.Sprintf("worker %d: reserved GPUs %v (the models package has no GPU kernels, so it computes on the CPU)", w.spec.Index, w.gpus), nil
	}
	return fmt.Sprintf("worker %d: CPU", w.spec.Index), nil
}

// SetWeights takes shard's part of the new weights (a reference to a
// server's Step result, read in place: no copy) and returns its version.
func (w *Worker) SetWeights(ctx context.Context, shard int, part gray.Shared[paramserver.Pulled]) (int64, error) {
	return w.view.Set(shard, part)
}

// setWeights copies the shipped weights (read-only views into the object
// store) into the replica's tensors.
func (w *Worker) setWeights() error {
	weights := w.view.Weights()
	for name, t := range w.byName {
		v, ok := weights[name]
		if !ok || len(v) != t.Len() {
			return fmt.Errorf("resnet: weights lack %q or have the wrong size (%d values, want %d)", name, len(v), t.Len())
		}
		copy(t.Data, v)
	}
	return nil
}

// Grad computes the gradient of the mean loss over a minibatch of
// spec.Batch images from this worker's shard at the weights SetWeights
// took (which must be version of every shard: a failed server step or
// a lost part is an error, not a step on stale weights), plus weight
// decay, times scale (the learning-rate schedule: the servers' SGD step is
// linear in the gradient), and returns it with the loss, the number of
// correct predictions and the compute time as metrics.
func (w *Worker) Grad(ctx context.Context, scale float64, version int64) (paramserver.Named, error) {
	start, cpu0 := time.Now(), processCPU()
	for s, v := range w.view.Versions() {
		if v != version {
			return nil, fmt.Errorf("resnet: worker %d holds version %d of shard %d's weights, want %d (did the server's step fail?)", w.spec.Index, v, s, version)
		}
	}
	if err := w.setWeights(); err != nil {
		return nil, err
	}
	x, y := w.batches.Next()
	batch, in := w.batches.Size(), w.net.NumInputs()
	// Part k: rows [lo, hi) on nets[k], its mean loss weighed by its share
	// of the batch, so that the parts' gradients add up to the batch's.
	loss := w.reps.Grad(batch, func(k int, t *models.Tape, lo, hi int) float64 {
		t.Reset()
		logits := w.nets[k].Forward(t, t.Const(hi-lo, in, x[lo*in:hi*in]), true)
		l := t.Scale(t.SoftmaxCrossEntropy(logits, t.Const(hi-lo, 1, y[lo:hi])), float64(hi-lo)/float64(batch))
		w.correct[k] = models.Correct(logits, y[lo:hi])
		t.Backward(l)
		return l.Item()
	})
	parts := w.reps.Shards(batch)
	shares := make([]float64, parts)
	correct := 0
	for k := range shares {
		lo, hi := models.ShardBounds(k, parts, batch)
		shares[k] = float64(hi-lo) / float64(batch)
		correct += w.correct[k]
	}
	if err := models.MergeRunningStats(w.norms, shares); err != nil {
		return nil, err
	}
	out := make(paramserver.Named, len(w.byName)+3)
	for name, tn := range w.byName {
		g := make([]float64, len(tn.Grad))
		for i, v := range tn.Grad {
			g[i] = scale * (v + w.spec.WeightDecay*tn.Data[i])
		}
		out[name] = g
	}
	out[keyLoss] = []float64{loss}
	out[keyCorrect] = []float64{float64(correct)}
	out[keySeconds] = []float64{time.Since(start).Seconds()}
	out[keyCPU] = []float64{(processCPU() - cpu0).Seconds()}
	return out, nil
}

// processCPU is the CPU time this worker process has used (user and
// system, all threads): set beside the wall time of a step, it shows
// whether the worker had a core to itself.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Evaluate returns the accuracy at the weights SetWeights took on the
// first n test images (0: all), using this replica's running batch-norm
// statistics.
func (w *Worker) Evaluate(ctx context.Context, n int) (float64, error) {
	if err := w.setWeights(); err != nil {
		return 0, err
	}
	return accuracy(w.net, w.test, n), nil
}

func accuracy(net *models.ResNet, set *fashionmnist.Set, n int) float64 {
	if n <= 0 || n > set.Len() {
		n = set.Len()
	}
	t := models.NewTape()
	t.SetNoGrad(true)
	var x, y []float64
	correct := 0
	const chunk = 250
	for i := 0; i < n; i += chunk {
		j := min(i+chunk, n)
		x, y = set.FillRange(i, j, x, y)
		t.Reset()
		correct += models.Correct(net.Forward(t, t.Const(j-i, set.Features(), x), false), y)
	}
	return float64(correct) / float64(max(n, 1))
}

var (
	workerActor = gray.Actor1("resnet.Worker", NewWorker)
	infoMethod  = gray.Method0(workerActor, "Info", (*Worker).Info)
	setMethod   = gray.Method2(workerActor, "SetWeights", (*Worker).SetWeights)
	gradMethod  = gray.Method2(workerActor, "Grad", (*Worker).Grad)
	evalMethod  = gray.Method1(workerActor, "Evaluate", (*Worker).Evaluate)
)
