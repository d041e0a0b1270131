// Package hyperopt holds what the hyperparameter-search examples share: the
// four hyperparameters of Ray 0.2's example (learning rate, batch size, dropout, weight
// initialisation scale) and real training of a small convolutional network
// on Fashion-MNIST with them.
//
// The network: 3×3 convolution to 8 channels, ReLU, 2×2 max pooling; 3×3
// convolution to 16 channels, ReLU, 2×2 max pooling; dropout; a dense
// layer to the 10 classes (9,098 weights, all drawn from N(0, stddev²) as
// in Ray 0.2's TensorFlow network), trained with Adam on softmax
// cross-entropy. Training state (weights, Adam's moments, steps) is a
// Model value, so a segment can continue where another stopped, in any
// worker process.
package hyperopt

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/datasets/fashionmnist"
	"github.com/gray-ml/gray/models"
)

// Hyperparameters are the four values Ray 0.2's example searches over.
type Hyperparameters struct {
	LearningRate float64 `cbor:"learning_rate" json:"learning_rate"`
	BatchSize    int     `cbor:"batch_size" json:"batch_size"`
	Dropout      float64 `cbor:"dropout" json:"dropout"`
	Stddev       float64 `cbor:"stddev" json:"stddev"`
}

// String is a compact description for logs.
func (h Hyperparameters) String() string {
	return fmt.Sprintf("lr=%.2e batch=%d dropout=%.2f stddev=%.2e", h.LearningRate, h.BatchSize, h.Dropout, h.Stddev)
}

// Validate rejects values training cannot use.
func (h Hyperparameters) Validate() error {
	if !(h.LearningRate > 0) || math.IsInf(h.LearningRate, 0) || h.BatchSize < 1 || !(h.Dropout >= 0 && h.Dropout < 1) || !(h.Stddev > 0) || math.IsInf(h.Stddev, 0) {
		return fmt.Errorf("hyperopt: hyperparameters %v: need a positive learning rate and stddev, batch size >= 1 and dropout in [0, 1)", h)
	}
	return nil
}

// Space is a search space: log-uniform learning rate and stddev, uniform
// batch size in [BatchLo, BatchHi) and dropout in [0, DropoutHi).
type Space struct {
	LogLRLo, LogLRHi   float64
	BatchLo, BatchHi   int
	DropoutHi          float64
	LogStdLo, LogStdHi float64
}

// Spaces by name: "wide" is the space of Ray 0.2's example
// (generate_hyperparameters: learning rate and stddev over 10^[-5, 5),
// batch size [1, 100), dropout [0, 1)), where most draws diverge; "narrow"
// keeps to values that train.
var Spaces = map[string]Space{
	"wide":   {LogLRLo: -5, LogLRHi: 5, BatchLo: 1, BatchHi: 100, DropoutHi: 1, LogStdLo: -5, LogStdHi: 5},
	"narrow": {LogLRLo: -4, LogLRHi: -1.5, BatchLo: 16, BatchHi: 129, DropoutHi: 0.6, LogStdLo: -2.5, LogStdHi: -0.5},
}

// Generate draws hyperparameters from s.
func (s Space) Generate(rng *rand.Rand) Hyperparameters {
	return Hyperparameters{
		LearningRate: math.Pow(10, s.LogLRLo+(s.LogLRHi-s.LogLRLo)*rng.Float64()),
		BatchSize:    s.BatchLo + rng.IntN(s.BatchHi-s.BatchLo),
		Dropout:      s.DropoutHi * rng.Float64(),
		Stddev:       math.Pow(10, s.LogStdLo+(s.LogStdHi-s.LogStdLo)*rng.Float64()),
	}
}

// Generate draws from the wide space, Ray 0.2's example's.
func Generate(rng *rand.Rand) Hyperparameters { return Spaces["wide"].Generate(rng) }

// SpaceHelp describes the spaces for a -space flag.
const SpaceHelp = "search space: narrow (ranges where every draw trains) or wide (Ray 0.2's example's ranges, where most draws diverge)"

// LookupSpace returns the space called name, or an error that names the
// spaces there are.
func LookupSpace(name string) (Space, error) {
	s, ok := Spaces[name]
	if !ok {
		return Space{}, fmt.Errorf("unknown space %q; use narrow or wide", name)
	}
	return s, nil
}

// Model is the state a training segment continues from. The zero Model
// means "from scratch".
type Model struct {
	Weights []float64 `cbor:"weights"`
	AdamM   []float64 `cbor:"adam_m"`
	AdamV   []float64 `cbor:"adam_v"`
	Adam    int       `cbor:"adam_step"`
	Steps   int       `cbor:"steps"`
	// Diverged is set once the loss became NaN, infinite or huge; such a
	// model is not trained further.
	Diverged bool `cbor:"diverged"`
}

// Outcome is what one training segment measured.
type Outcome struct {
	// Accuracy is on the validation set after the segment.
	Accuracy float64 `cbor:"accuracy"`
	// FirstLoss and LastLoss are the mean training losses of the segment's
	// first and last tenth of steps.
	FirstLoss float64 `cbor:"first_loss"`
	LastLoss  float64 `cbor:"last_loss"`
	Steps     int     `cbor:"steps"`
	Diverged  bool    `cbor:"diverged"`
}

// cnn is the network.
type cnn struct {
	params         *models.Params
	k1, b1, k2, b2 *models.Tensor
	g1, g2         models.ConvGeom
	p1, p2         models.PoolGeom
	fc             *models.Dense
	drop           *models.Dropout
}

func newCNN(hp Hyperparameters, seed uint64) (*cnn, error) {
	n := &cnn{params: models.NewParams()}
	var err error
	if n.g1, err = models.NewConvGeom(28, 28, 1, 3, 3, 1, true); err != nil {
		return nil, err
	}
	if n.p1, err = models.NewPoolGeom(28, 28, 8, 2, 2); err != nil {
		return nil, err
	}
	if n.g2, err = models.NewConvGeom(14, 14, 8, 3, 3, 1, true); err != nil {
		return nil, err
	}
	if n.p2, err = models.NewPoolGeom(14, 14, 16, 2, 2); err != nil {
		return nil, err
	}
	p := n.params
	n.k1, n.b1 = p.New("conv1/w", 9, 8), p.New("conv1/b", 1, 8)
	n.k2, n.b2 = p.New("conv2/w", 72, 16), p.New("conv2/b", 1, 16)
	n.fc = models.NewDense(p, "fc", 7*7*16, fashionmnist.NumClasses)
	if n.drop, err = models.NewDropout(hp.Dropout, seed); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x1417))
	for _, w := range []*models.Tensor{n.k1, n.k2, n.fc.W} {
		for i := range w.Data {
			w.Data[i] = hp.Stddev * rng.NormFloat64()
		}
	}
	return n, nil
}

func (n *cnn) forward(t *models.Tape, x *models.Tensor, train bool) *models.Tensor {
	h := t.MaxPool2D(t.Relu(t.Conv2D(x, n.g1, n.k1, n.b1)), n.p1)
	h = t.MaxPool2D(t.Relu(t.Conv2D(h, n.g2, n.k2, n.b2)), n.p2)
	return n.fc.Forward(t, n.drop.Forward(t, h, train))
}

// restore builds the network and optimizer for hp and loads model into
// them (nothing for the zero Model).
func restore(hp Hyperparameters, model Model, seed uint64) (*cnn, *models.Adam, error) {
	if err := hp.Validate(); err != nil {
		return nil, nil, err
	}
	net, err := newCNN(hp, seed)
	if err != nil {
		return nil, nil, err
	}
	opt := models.NewAdam(hp.LearningRate)
	if model.Weights != nil {
		if err := net.params.SetFlat(model.Weights); err != nil {
			return nil, nil, fmt.Errorf("hyperopt: model to continue from: %w", err)
		}
		if err := opt.SetState(models.AdamState{Step: model.Adam, M: model.AdamM, V: model.AdamV}); err != nil {
			return nil, nil, err
		}
	}
	return net, opt, nil
}

// Train trains hp's network for steps minibatches from model (the zero
// Model: from scratch) and returns what it measured on val and the model
// to continue from. A diverged model is returned as is, untrained.
func Train(hp Hyperparameters, model Model, train, val *fashionmnist.Set, steps int, seed uint64) (Outcome, Model, error) {
	return TrainThreads(hp, model, train, val, steps, seed, 1)
}

// TrainThreads is Train with each minibatch split into threads fixed parts
// whose gradients are computed together on copies of the network sharing
// its weights (models.Replicas; copy k drops out with its own generator),
// then summed in order: a seed and a thread count give the same model on
// any machine.
func TrainThreads(hp Hyperparameters, model Model, train, val *fashionmnist.Set, steps int, seed uint64, threads int) (Outcome, Model, error) {
	if threads < 1 {
		return Outcome{}, model, fmt.Errorf("hyperopt: threads must be at least 1, got %d", threads)
	}
	net, opt, err := restore(hp, model, seed)
	if err != nil {
		return Outcome{}, model, err
	}
	team := models.NewTeam(threads)
	defer team.Close()
	nets := []*cnn{net}
	var copies []*models.Params
	for k := 1; k < threads; k++ {
		c, err := newCNN(hp, seed+uint64(k)*0x9e3779b97f4a7c15)
		if err != nil {
			return Outcome{}, model, err
		}
		nets, copies = append(nets, c), append(copies, c.params)
	}
	reps, err := models.NewReplicas(team, net.params, copies)
	if err != nil {
		return Outcome{}, model, err
	}
	out := Outcome{Steps: model.Steps, Diverged: model.Diverged}
	if !model.Diverged {
		batches := train.Batches(hp.BatchSize, seed^uint64(model.Steps)*0x9e3779b97f4a7c15)
		tenth := max(steps/10, 1)
		var first, last float64
		var nFirst, nLast int
		for s := 0; s < steps; s++ {
			x, y := batches.Next()
			b, in := batches.Size(), train.Features()
			// Each part's mean loss weighted by its share of the batch:
			// the parts' gradients add up to the batch's.
			l := reps.Grad(b, func(k int, t *models.Tape, lo, hi int) float64 {
				t.Reset()
				logits := nets[k].forward(t, t.Const(hi-lo, in, x[lo*in:hi*in]), true)
				loss := t.Scale(t.SoftmaxCrossEntropy(logits, t.Const(hi-lo, 1, y[lo:hi])), float64(hi-lo)/float64(b))
				if l := loss.Item(); math.IsNaN(l) || math.IsInf(l, 0) {
					return l
				}
				t.Backward(loss)
				return loss.Item()
			})
			if math.IsNaN(l) || math.IsInf(l, 0) || l > 1e3 {
				out.Diverged = true
				break
			}
			if s < tenth {
				first += l
				nFirst++
			}
			if s >= steps-tenth {
				last += l
				nLast++
			}
			if err := opt.StepOn(team, net.params.Flat(), net.params.Grads()); err != nil {
				return Outcome{}, model, err
			}
			out.Steps++
		}
		if nFirst > 0 {
			out.FirstLoss = first / float64(nFirst)
		}
		if nLast > 0 {
			out.LastLoss = last / float64(nLast)
		}
	}
	st := opt.State()
	next := Model{Weights: net.params.GetFlat(nil), AdamM: st.M, AdamV: st.V, Adam: st.Step, Steps: out.Steps, Diverged: out.Diverged}
	if out.Diverged {
		out.Accuracy = 1 / float64(fashionmnist.NumClasses) // chance: the weights are no longer numbers
		return out, next, nil
	}
	out.Accuracy = evaluate(net, val)
	return out, next, nil
}

// Accuracy returns model's accuracy on set.
func Accuracy(hp Hyperparameters, model Model, set *fashionmnist.Set) (float64, error) {
	if model.Diverged {
		return 1 / float64(fashionmnist.NumClasses), nil
	}
	net, _, err := restore(hp, model, 0)
	if err != nil {
		return 0, err
	}
	return evaluate(net, set), nil
}

func evaluate(net *cnn, set *fashionmnist.Set) float64 {
	if set.Len() == 0 {
		return 0
	}
	tape := models.NewTape()
	tape.SetNoGrad(true)
	const chunk = 500
	var x, y []float64
	correct := 0
	for i := 0; i < set.Len(); i += chunk {
		j := min(i+chunk, set.Len())
		x, y = set.FillRange(i, j, x, y)
		tape.Reset()
		logits := net.forward(tape, tape.Const(j-i, set.Features(), x), false)
		correct += models.Correct(logits, y)
	}
	return float64(correct) / float64(set.Len())
}

// Data is the examples' data: a shuffled training set split into training
// and validation images, and the test set.
type Data struct {
	Train, Val, Test *fashionmnist.Set
}

// LoadData reads Fashion-MNIST from dir ("" means the Debian path) and
// holds out valN of the first trainN+valN training images (after a fixed
// shuffle) for validation; trainN 0 trains on all the others, testN limits
// the test set (0: all).
func LoadData(dir string, trainN, valN, testN int) (Data, error) {
	n := 0
	if trainN > 0 {
		n = trainN + valN
	}
	all, err := fashionmnist.LoadSplitN(dir, "train", n)
	if err != nil {
		return Data{}, err
	}
	if all.Len() < max(n, valN+1) {
		return Data{}, fmt.Errorf("hyperopt: %d training and %d validation images wanted, the training set has %d", trainN, valN, all.Len())
	}
	val, train := all.Shuffled(7).Split(valN)
	test, err := fashionmnist.LoadSplitN(dir, "test", testN)
	if err != nil {
		return Data{}, err
	}
	return Data{Train: train, Val: val, Test: test}, nil
}
