package ppo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/models/cuda"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// With num_gpus: 1 the learner runs in an actor that reserves the GPU
// (the runtime gives it CUDA_VISIBLE_DEVICES and GPUIDs), while the
// rollout workers stay on CPUs. Each iteration the driver sends the batch
// and gets the new weights and Adam's state back; the weights, gradients
// and moments stay on the GPU in between. The actor reserves the GPU and
// no CPU, as the driver's learner reserves none: num_workers may use every
// CPU (rllib.CheckWorkers) without the learner waiting for one.
var (
	gpuLearnerActor = gray.Actor1("ppo.GPULearner", NewGPULearner, gray.GPUs(1))
	gpuInfoMethod   = gray.Method0(gpuLearnerActor, "Info", (*GPULearner).Info)
	gpuLearnMethod  = gray.Method1(gpuLearnerActor, "Learn", (*GPULearner).Learn)
)

// Learner backends a GPULearner can run.
const (
	// BackendCUDA computes on the GPU (package models/cuda).
	BackendCUDA = "cuda"
	// BackendCPU runs the CPU learner inside the GPU learner's actor: the
	// same placement and traffic without a GPU, for tests on machines
	// without one.
	BackendCPU = "cpu"
)

// LearnerSpec is what the learner actor is built from.
type LearnerSpec struct {
	Env       string
	EnvConfig map[string]any
	Config    Config
	Seed      int64
	Backend   string
}

// LearnerInfo says where the learner runs.
type LearnerInfo struct {
	Backend string
	Device  string
	GPUIDs  []int
}

// LearnRequest is one iteration's work for the learner actor. Weights and
// Adam are set only when the driver's copy changed since the last reply
// (the first iteration, a Restore): otherwise only the batch goes up.
type LearnRequest struct {
	Batch   sample.Batch
	LR      float64
	KLCoeff float64
	Iter    int
	Weights []float64
	Adam    *models.AdamState
}

// LearnReply is the new weights, Adam's state and the statistics.
type LearnReply struct {
	Weights                                              []float64
	Adam                                                 models.AdamState
	PolicyLoss, VFLoss, TotalLoss, Entropy, KL, GradNorm float64
}

// GPULearner is the state of the learner actor.
type GPULearner struct {
	spec LearnerSpec
	pol  *policy
	info LearnerInfo
	// one of: the device learner, or the CPU learner standing in
	dev *cuda.Device
	gpu *cuda.PPOLearner
	cpu *learner
}

// NewGPULearner builds the policy and puts it on the GPU. Without a
// usable GPU, or for a model the GPU cannot compute, it fails with a
// one-line error naming the fix.
func NewGPULearner(ctx context.Context, spec LearnerSpec) (*GPULearner, error) {
	cfg := spec.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	obsSpace, actSpace, err := rllib.EnvSpaces("PPO", rllib.Options{Env: spec.Env, EnvConfig: spec.EnvConfig})
	if err != nil {
		return nil, err
	}
	proc, err := newObsProcessor(spec.Env, obsSpace, cfg.ObservationFilter, cfg.Model.Image())
	if err != nil {
		return nil, err
	}
	mk := func() (*policy, error) { return newPolicy(proc.pre, actSpace, cfg.Model, spec.Seed) }
	pol, err := mk()
	if err != nil {
		return nil, err
	}
	g := &GPULearner{spec: spec, pol: pol, info: LearnerInfo{Backend: spec.Backend, GPUIDs: gray.GPUIDs(ctx)}}
	switch spec.Backend {
	case BackendCPU:
		g.info.Device = "CPU"
		// The stand-in learner runs in the GPU actor, which reserves no
		// CPUs of its own beyond one: num_learner_threads when given.
		threads := 1
		if n := g.spec.Config.NumLearnerThreads; n != nil {
			threads = *n
		}
		g.cpu, err = newLearner(&g.spec.Config, pol, threads, mk)
	case BackendCUDA:
		err = g.openCUDA()
	default:
		err = fmt.Errorf("unknown learner backend %q", spec.Backend)
	}
	if err != nil {
		_ = g.Close()
		return nil, err
	}
	return g, nil
}

func (g *GPULearner) openCUDA() error {
	if g.pol.Dist.Name() != "Categorical" {
		return &models.NoDeviceKernelError{Layer: fmt.Sprintf("PPO's loss for a %s action distribution (the GPU computes Categorical policies)", g.pol.Dist.Name())}
	}
	if _, err := models.DeviceGraphOf(g.pol.Model); err != nil {
		return err // before touching the GPU: the model is at fault, not the machine
	}
	d, err := cuda.Open(0)
	if err != nil {
		return err
	}
	g.dev, g.info.Device = d, d.String()
	c := g.spec.Config
	g.gpu, err = cuda.NewPPOLearner(d, g.pol.Model, min(c.SGDMinibatchSize, c.TrainBatchSize), cuda.PPOConfig{
		ClipParam: c.ClipParam, VFClipParam: c.VFClipParam, VFLossCoeff: c.VFLossCoeff,
		EntropyCoeff: c.EntropyCoeff, GradClip: c.GradClip,
	})
	return err
}

// Close releases the device (or the CPU learner's extra models).
func (g *GPULearner) Close() error {
	var errs []error
	if g.gpu != nil {
		errs = append(errs, g.gpu.Close())
		g.gpu = nil
	}
	if g.dev != nil {
		errs = append(errs, g.dev.Close())
		g.dev = nil
	}
	if g.cpu != nil {
		errs = append(errs, g.cpu.close())
		g.cpu = nil
	}
	if g.pol != nil {
		errs = append(errs, g.pol.Close())
		g.pol = nil
	}
	return errors.Join(errs...)
}

// Info reports the backend, the device and the GPUs reserved.
func (g *GPULearner) Info(ctx context.Context) (LearnerInfo, error) { return g.info, nil }

// Learn runs one iteration's SGD. On failure the learner's weights and
// optimizer state stay those of before the call.
func (g *GPULearner) Learn(ctx context.Context, req LearnRequest) (LearnReply, error) {
	if req.Weights != nil {
		if err := g.setState(req.Weights, req.Adam); err != nil {
			return LearnReply{}, err
		}
	}
	cfg := &g.spec.Config
	rng := shuffleRNG(g.spec.Seed, req.Iter)
	var s learnStats
	var reply LearnReply
	var err error
	if g.cpu != nil {
		good, goodOpt := g.pol.Params.GetFlat(nil), g.cpu.opt.State()
		if s, err = g.cpu.learn(ctx, &req.Batch, req.LR, req.KLCoeff, rng); err != nil {
			_ = g.pol.Params.SetFlat(good)
			_ = g.cpu.opt.SetState(goodOpt)
			return LearnReply{}, err
		}
		reply.Weights, reply.Adam = g.pol.Params.GetFlat(nil), g.cpu.opt.State()
	} else {
		b := &req.Batch
		if b.ActDim != 1 {
			return LearnReply{}, fmt.Errorf("the GPU learner takes one categorical action per row, the batch has %d", b.ActDim)
		}
		pb := &cuda.PPOBatch{N: b.Len(), Obs: b.Obs, Act: b.Actions, Logp: b.Logp, Adv: b.Advantages,
			VTarg: b.ValueTargets, VPred: b.VPreds, Dist: b.DistInputs}
		shuffle := func(p []int) { rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] }) }
		st, err := g.gpu.Learn(pb, cfg.NumSGDIter, cfg.SGDMinibatchSize, shuffle, req.LR, req.KLCoeff)
		if err != nil {
			return LearnReply{}, err
		}
		s = learnStats{policyLoss: st.PolicyLoss, vfLoss: st.VFLoss, totalLoss: st.TotalLoss, entropy: st.Entropy, kl: st.KL, gradNorm: st.GradNorm}
		if reply.Weights, err = g.gpu.Net().Weights(nil); err != nil {
			return LearnReply{}, err
		}
		if reply.Adam, err = g.gpu.Net().AdamState(); err != nil {
			return LearnReply{}, err
		}
	}
	reply.PolicyLoss, reply.VFLoss, reply.TotalLoss = s.policyLoss, s.vfLoss, s.totalLoss
	reply.Entropy, reply.KL, reply.GradNorm = s.entropy, s.kl, s.gradNorm
	for _, w := range reply.Weights {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return LearnReply{}, &nanError{what: "a weight"}
		}
	}
	return reply, nil
}

// setState takes the driver's weights and optimizer state.
func (g *GPULearner) setState(w []float64, adam *models.AdamState) error {
	var st models.AdamState
	if adam != nil {
		st = *adam
	}
	if g.cpu != nil {
		if err := g.pol.Params.SetFlat(w); err != nil {
			return err
		}
		return g.cpu.opt.SetState(st)
	}
	if err := g.gpu.Net().SetWeights(w); err != nil {
		return err
	}
	return g.gpu.Net().SetAdamState(st)
}

// remoteLearner is the driver's side of the learner actor.
type remoteLearner struct {
	h    gray.Handle[GPULearner]
	info LearnerInfo
	// synced are the weights the actor holds (its last reply); when the
	// driver's differ (a Restore), the next request carries them.
	synced []float64
}

// checkGPUs says whether the runtime's resources (nil: unknown, inside a
// worker) can hold a learner on numGPUs GPUs.
func checkGPUs(numGPUs float64, res map[string]float64) error {
	if res == nil || res["GPU"] >= numGPUs {
		return nil
	}
	return fmt.Errorf("PPO: num_gpus: %g needs a GPU, and the runtime has %g (NVML found no NVIDIA GPU here): set num_gpus: 0 to learn on the CPU, or run on a machine with a GPU and its driver", numGPUs, res["GPU"])
}

// newRemoteLearner starts the learner actor and waits until it is ready,
// so that a machine without a usable GPU fails here, with its reason.
func newRemoteLearner(ctx context.Context, a *Agent, backend string) (*remoteLearner, error) {
	if !gray.IsInitialized() {
		return nil, errors.New("PPO: num_gpus needs the gray runtime (the learner runs in an actor that reserves the GPU): call gray.Init first (the train command does), or set num_gpus: 0")
	}
	if err := checkGPUs(a.Cfg.NumGPUs, gray.ClusterResources()); err != nil {
		return nil, err
	}
	spec := LearnerSpec{Env: a.Opts.Env, EnvConfig: a.Opts.EnvConfig, Config: a.Cfg, Seed: a.Seed, Backend: backend}
	h, err := gpuLearnerActor.Remote(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("PPO: starting the GPU learner: %w", err)
	}
	info, err := gray.Get(ctx, gpuInfoMethod.Remote(h))
	if err != nil {
		_ = gray.Kill(h)
		return nil, fmt.Errorf("PPO: the GPU learner: %w", err)
	}
	return &remoteLearner{h: h, info: info}, nil
}

// learn runs the iteration on the learner actor and takes its weights and
// Adam's state into the driver's policy and optimizer.
func (r *remoteLearner) learn(ctx context.Context, a *Agent, b *sample.Batch, lr, klCoeff float64, iter int) (learnStats, error) {
	req := LearnRequest{Batch: *b, LR: lr, KLCoeff: klCoeff, Iter: iter}
	if !slices.Equal(r.synced, a.pol.Params.Flat()) {
		st := a.learner.opt.State()
		req.Weights, req.Adam = a.pol.Params.GetFlat(nil), &st
	}
	rep, err := gray.Get(ctx, gpuLearnMethod.Remote(r.h, req))
	if err != nil {
		// The actor may hold half-stepped weights: send the driver's
		// (restored by the caller) with the next request.
		r.synced = nil
		return learnStats{}, fmt.Errorf("GPU learner: %w", err)
	}
	if err := a.pol.Params.SetFlat(rep.Weights); err != nil {
		return learnStats{}, err
	}
	if err := a.learner.opt.SetState(rep.Adam); err != nil {
		return learnStats{}, err
	}
	r.synced = rep.Weights
	return learnStats{policyLoss: rep.PolicyLoss, vfLoss: rep.VFLoss, totalLoss: rep.TotalLoss,
		entropy: rep.Entropy, kl: rep.KL, gradNorm: rep.GradNorm}, nil
}

func (r *remoteLearner) close() error { return gray.Kill(r.h) }
