package rollout

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/sample"
)

// Runner runs a step's per-environment work in parts on several
// goroutines at once (a models.Team: the learner's threads, idle while
// the driver samples).
type Runner interface {
	// Size is the number of goroutines, the caller's included.
	Size() int
	// Run calls fn(k) for every k in [0, parts) and returns when all have
	// returned.
	Run(parts int, fn func(k int))
}

// PartProcessor is an ObsProcessor whose work splits in two, so that a
// worker can preprocess its sub-environments' observations on several
// goroutines: Transform, which for distinct streams may run at once, and
// Filter (a running filter learns from observations in a fixed order),
// which the worker calls on one goroutine in stream order. Transform
// followed by Filter must equal ProcessStream.
type PartProcessor interface {
	ObsProcessor
	StreamProcessor
	// Parts reports whether Transform may run at once for distinct
	// streams, and whether it reads 8-bit frames (envs' frame mode).
	Parts() (concurrent, frames bool)
	// Transform writes the preprocessed form of the observation raw, or of
	// frame when raw is nil, of stream (starting an episode when start is
	// set) into dst, before any running filter.
	Transform(stream int, start bool, dst, raw []float64, frame []uint8) error
	// Filter applies the running filter, if there is one, to dst.
	Filter(dst []float64, update bool) error
}

// setParts picks how the worker steps its sub-environments: in parts run
// by runner when the Vector can step ranges at once and the processor can
// transform streams at once (parts of contiguous sub-environments, one per
// goroutine), reading 8-bit frames when both can. Every part's results
// are the same however the sub-environments are grouped, so a run does
// not depend on the runner's size.
func (w *Worker) setParts(runner Runner) {
	w.parts = 1
	// Allocated here, not when first needed: parts write its rows at once.
	w.finalBuf = make([]float64, w.cfg.NumEnvs*w.obsDim)
	rs, ok := w.vec.(envs.RangeStepper)
	if !ok || !rs.Concurrent() {
		return
	}
	w.rs = rs
	w.errs = make([]error, w.cfg.NumEnvs)
	sp, ok := w.proc.(PartProcessor)
	if !ok {
		return
	}
	concurrent, frames := sp.Parts()
	if !concurrent {
		return
	}
	w.split = sp
	w.frames = frames && rs.FrameSize() > 0
	n := w.cfg.NumEnvs
	if runner != nil {
		w.runner, w.parts = runner, max(1, min(runner.Size(), n))
	}
}

// stepAll copies every sub-environment's current observation into row t
// of its fragment in b, steps them and preprocesses what they returned
// (into w.obs, and an ended episode's final observation into w.finalBuf),
// in parts when setParts chose so. A splitting processor's running filter
// is left to the caller, which runs it in stream order.
func (w *Worker) stepAll(b *sample.Batch, t int) error {
	n, T, d := w.cfg.NumEnvs, w.cfg.FragmentLength, w.obsDim
	if w.rs == nil {
		for i := range n {
			r := i*T + t
			copy(b.Obs[r*d:(r+1)*d], w.row(i))
		}
		step, err := w.stepEnvs()
		if err != nil {
			return fmt.Errorf("rollout: stepping %q: %w", w.cfg.Env, err)
		}
		w.step = step
		for i := range n {
			if err := w.transformEnv(i); err != nil {
				return err
			}
		}
		return nil
	}
	if err := w.rs.StartStep(w.actions, &w.step, w.frames); err != nil {
		return fmt.Errorf("rollout: stepping %q: %w", w.cfg.Env, err)
	}
	part := func(k int) {
		lo, hi := models.ShardBounds(k, w.parts, n)
		for i := lo; i < hi; i++ {
			r := i*T + t
			copy(b.Obs[r*d:(r+1)*d], w.row(i))
			if err := w.rs.StepRange(w.actions, &w.step, i, i+1, w.frames); err != nil {
				w.errs[i] = fmt.Errorf("rollout: stepping %q: %w", w.cfg.Env, err)
				continue
			}
			w.errs[i] = w.transformEnv(i)
		}
	}
	if w.runner == nil || w.parts == 1 {
		part(0)
	} else {
		w.runner.Run(w.parts, part)
	}
	// The first error in sub-environment order, whichever part met it.
	for _, err := range w.errs {
		if err != nil {
			clear(w.errs)
			return err
		}
	}
	return nil
}

// transformEnv preprocesses sub-environment i's outcome of the last step:
// the final observation of a truncated episode into its w.finalBuf row,
// then the next observation into w.obs.
func (w *Worker) transformEnv(i int) error {
	term, trunc := w.step.Terminated[i], w.step.Truncated[i]
	if trunc && !term {
		raw, frame, ok := w.final(i)
		if !ok {
			return errors.New("rollout: a truncated episode came without its final observation")
		}
		if err := w.transform(i, false, w.finalRow(i), raw, frame, false); err != nil {
			return fmt.Errorf("rollout: final observation of %q sub-environment %d: %w", w.cfg.Env, i, err)
		}
	}
	var raw []float64
	var frame []uint8
	if w.frames {
		frame = w.step.Frames[i]
	} else {
		raw = w.step.Obs[i]
	}
	if err := w.transform(i, term || trunc, w.row(i), raw, frame, true); err != nil {
		return fmt.Errorf("rollout: observation of %q sub-environment %d: %w", w.cfg.Env, i, err)
	}
	return nil
}

// final is the final observation of sub-environment i's ended episode.
func (w *Worker) final(i int) (raw []float64, frame []uint8, ok bool) {
	if w.frames {
		frame = w.step.FinalFrames[i]
		return nil, frame, frame != nil
	}
	if w.step.FinalObs == nil || w.step.FinalObs[i] == nil {
		return nil, nil, false
	}
	return w.step.FinalObs[i], nil, true
}

// transform preprocesses one observation of sub-environment i into dst:
// without the running filter when the processor splits (Sample applies
// it), else with it (update: whether it may learn from raw).
func (w *Worker) transform(i int, start bool, dst, raw []float64, frame []uint8, update bool) error {
	if w.split != nil {
		return w.split.Transform(i, start, dst, raw, frame)
	}
	return w.process(i, start, dst, raw, update)
}

// finalRow is sub-environment i's row of w.finalBuf.
func (w *Worker) finalRow(i int) []float64 {
	return w.finalBuf[i*w.obsDim : (i+1)*w.obsDim]
}
