// Package models holds Gray's neural-network toolkit for reinforcement
// learning: float64 tensors with reverse-mode automatic differentiation on
// gonum's BLAS, fully connected networks, optimizers, action distributions,
// the model catalog, observation preprocessors and a running observation
// filter.
//
// # Pieces
//
//   - Tensor: a row-major [rows×cols] matrix; a batch is [batch×features].
//   - Tape: records operations (MatMul, Linear, Add, Mul, Tanh, LogSoftmax,
//     Gather, Minimum, Clip, Mean, ...) and backpropagates through them.
//     Reset it each step: it reuses its buffers, so a steady training loop
//     allocates nothing.
//   - Params: a model's weights as one flat vector (Flat, GetFlat, SetFlat)
//     and its gradients as another (Grads, GetFlatGrad, SetFlatGrad), for
//     shipping weights and gradients between workers.
//   - FullyConnected (NewFullyConnected, or NewModel from the catalog): hidden
//     layers, an output layer, optional free log-std and value function,
//     configured by ModelOptions with RLlib's keys (fcnet_hiddens,
//     fcnet_activation, free_log_std, vf_share_layers). ConvNet (Conv2D
//     layers from conv_filters, then the same fully connected part) serves
//     image observations [H, W, C]; without conv_filters it takes RLlib's
//     stacks for 84×84 and 42×42 images (DefaultConvFilters). Convolutions
//     unfold a few images at a time (im2col) into the matrix kernels
//     (AVX-512 or AVX2+FMA assembly where the CPU has them).
//   - LSTMNet (use_lstm, lstm_cell_size, max_seq_len): fully connected
//     layers, an LSTM and the heads; it implements Recurrent, whose
//     ForwardSeq runs time-major sequences from a given state and returns
//     the next one. Tape.LSTM is the fused layer (all steps in one
//     operation, backpropagation through time in Backward) and LSTMLayer
//     its weights.
//   - Adam, SGD and ClipByGlobalNorm work on the flat vectors.
//   - DeviceGraphOf describes a catalog network (FullyConnected, ConvNet)
//     as plain layers over its flat parameters, for the GPU backend in
//     package models/cuda; other models give a NoDeviceKernelError.
//   - ActionDist: Categorical, DiagGaussian, Deterministic. Tape methods
//     (LogLikelihood, Entropy, KL) are differentiable; Sample, Mode and
//     LogProb are the allocation-free rollout path on plain slices and
//     return errors. custom_action_dist names one built elsewhere
//     (NewActionDist, RegisterDistResolver; "plugin:<path>" with package
//     plugins).
//   - Catalog: ActionDistFor(space, ""), NewModel(shape, n, opts, seed),
//     NewPreprocessor / GetPreprocessor / RegisterPreprocessor, NewPolicy
//     bundling all three, and MeanStdFilter for observation normalisation.
//   - Image observations (IsImage: Box [H, W, C] of values in [0, 255])
//     get an ImagePreprocessor from PreprocessorFor: crop, grayscale, shrink
//     to dim×dim, and optionally frame differencing and frame stacking (the
//     model keys crop, grayscale, dim, frame_diff, framestack). Stacking and
//     differencing keep one history per stream (StreamPreprocessor), which
//     PPO's rollout workers drive with one stream per sub-environment.
//
// # Supervised learning
//
// Classification pieces, used by the Fashion-MNIST examples:
// Tape.SoftmaxCrossEntropy (the mean loss over a batch of logits and class
// indices), Tape.MaxPool2D (PoolGeom) and Tape.GlobalAvgPool over
// height-width-channel images, Dropout (inverted; identity in
// evaluation), BatchNorm (per channel, batch statistics in training and
// running ones in evaluation), ConvBN, ResidualBlock and ResNet, InitHe,
// SGD's WeightDecay, and Correct, Accuracy and Argmax for evaluation.
// Pooling and batch normalisation are Funcs run through Tape.Apply: their
// backward passes recompute what they need from the inputs.
//
//	net, _ := models.NewResNet(models.ResNetConfig{H: 28, W: 28, C: 1, Classes: 10, Widths: []int{8, 16, 32}, Blocks: 1}, seed)
//	params := net.Params()
//	opt := &models.SGD{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4}
//
//	tape.Reset()
//	logits := net.Forward(tape, tape.Const(n, 784, x), true) // false: evaluation
//	loss := tape.SoftmaxCrossEntropy(logits, tape.Const(n, 1, labels))
//	params.ZeroGrad()
//	tape.Backward(loss)
//	_ = opt.Step(params.Flat(), params.Grads())
//	acc := models.Accuracy(logits, labels)
//
// # One PPO training step
//
//	pol, _ := models.NewPolicy("CartPole-v1", env.ObservationSpace(), env.ActionSpace(), "",
//		models.ModelOptions{Hiddens: []int{64, 64}, Activation: "tanh", Value: true}, seed)
//	params := pol.Model.Params()
//	opt := models.NewAdam(3e-4)
//	tape := models.NewTape()
//
//	// obs [n×4], actions, old log-probs, advantages, returns: flat []float64.
//	tape.Reset()
//	o := pol.Model.Forward(tape, tape.Const(n, 4, obs))
//	logp := pol.Dist.LogLikelihood(tape, o.Out, tape.Const(n, 1, actions))
//	ratio := tape.Exp(tape.Sub(logp, tape.Const(n, 1, oldLogp)))
//	adv := tape.Const(n, 1, advantages)
//	surr := tape.Minimum(tape.Mul(ratio, adv), tape.Mul(tape.Clip(ratio, 0.8, 1.2), adv))
//	vfLoss := tape.Mean(tape.Square(tape.Sub(o.Value, tape.Const(n, 1, returns))))
//	entropy := tape.Mean(pol.Dist.Entropy(tape, o.Out))
//	loss := tape.Add(tape.Sub(tape.Scale(vfLoss, 0.5), tape.Mean(surr)), tape.Scale(entropy, -0.01))
//
//	params.ZeroGrad()
//	tape.Backward(loss)                                // gradients land in params.Grads()
//	norm := models.ClipByGlobalNorm(params.Grads(), 0.5) // pre-clip norm, for logging
//	opt.LR = lr                                         // schedules: set before each step
//	_ = opt.Step(params.Flat(), params.Grads())
//	_ = loss.Item()                                     // the loss value
//
// tape.BackwardSet(loss, params) does ZeroGrad and Backward in one: the
// first operation of the backward pass that reaches a parameter writes its
// gradient instead of adding to a cleared one (the same bits, without a
// pass over every gradient first). Data-parallel learners use it for their
// shards, whose gradients Team.SumStep then only reads. A network with a
// value network of its own offers the two as Towers (FullyConnected.Towers):
// each one's loss on a tape of its own, BackwardSet into its own slice of
// the gradients (Tower.Params), gives the whole network's gradient bit for
// bit, and the two can run on two cores at once (PPO's learner does, as a
// Team.SplitStep: each network's part writes its own range of the one
// gradient, squares it for the norm, and the team then updates it).
//
// # Acting
//
// Policy.Act does preprocessing, the optional MeanStdFilter, a no-grad
// forward pass, sampling (or the mode), log-probs and values in one call,
// reusing the buffers of its Actions argument:
//
//	var a models.Actions
//	err := pol.Act(actTape, rng, vecObs /* [][]float64 from envs.Vector */, true, &a)
//	// a.Actions, a.LogP, a.Values, a.DistInputs, a.Obs (preprocessed rows)
//
// By hand: tape.SetNoGrad(true); o := Model.Forward(...); then
// Dist.Sample(rng, o.Out.Data, actions) and Dist.LogProb(o.Out.Data,
// actions, logp).
//
// A ConvNet computes its convolutions in float32 where the CPU has
// AVX-512, acting and training alike (observations and weights narrowed as
// they are read, the features widened back for the float64 heads). In
// training the convolutional layers are one tape operation whose forward
// and backward passes run in float32 and whose weight gradients are added
// into the float64 ones: the parameters, their gradients and the
// optimizer's state stay float64, the flat vectors that optimizers,
// parameter servers, A3C's gradient shipping and checkpoints share. A
// training step of the catalog's default nets takes about half the time
// of the float64 path; outputs and gradients differ from it by float32
// rounding (relative 1e-6 to 1e-5), and the same network learns the same
// way (TestConvNetFloat32LearnsAsFloat64). The model option conv_float64
// (ModelOptions.ConvFloat64) keeps the convolutions in float64, the
// reference path; without AVX-512 (or built with -tags purego) they are
// float64 too, since the portable float32 loops would be slower than the
// float64 kernels.
//
// # Other algorithms
//
// DQN: q := Forward(...).Out; qa := tape.Gather(q, tape.Const(n, 1, acts));
// targets from a second model (SetFlat from the online one) with
// tape.RowMax; loss tape.Mean(tape.Huber(tape.Sub(qa, target), 1)).
// A3C ships params.GetFlatGrad(nil) and applies received gradients with
// params.SetFlatGrad then opt.Step. ES perturbs params.Flat() directly.
//
// Model plugins: tape.Variable gives input gradients; tape.AddGrad +
// tape.Propagate (or BackwardFrom) backpropagate output gradients that
// arrive from elsewhere; tape.Apply runs an external Func (a remote model)
// inside a local graph, reporting its errors through tape.Err.
//
// Weights travel as params.GetFlat(nil) and arrive with params.SetFlat(w);
// save params.Signature() with them and compare it on restore.
// params.CheckFinite(true) names the first NaN or Inf weight or gradient.
//
// Shape errors are programming errors and panic with a message naming the
// operation and the shapes; everything that depends on user input (spaces,
// options, weight vectors, observations) returns an error instead.
package models
