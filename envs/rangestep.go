package envs

import "fmt"

// RangeStepper is implemented by Vectors whose sub-environments can be
// stepped a range at a time, so that a rollout worker can split one step
// of many sub-environments over several goroutines: StartStep validates
// every action and sizes out once, then StepRange steps ranges of
// sub-environments, disjoint ranges at once when Concurrent reports so.
// A sub-environment's results do not depend on how it was grouped: each
// keeps its own random stream and episode count.
//
// In frame mode (frames set, FrameSize > 0) StepRange hands out each
// sub-environment's 8-bit frame in out.Frames (and out.FinalFrames)
// instead of widening it into out.Obs: an image preprocessor reading the
// bytes moves an eighth of the memory the float64 observation would.
type RangeStepper interface {
	Vector
	// Concurrent reports whether disjoint ranges may be stepped at once
	// from different goroutines (built-in environments may; a user's
	// environments could share state, so they step one range at a time).
	Concurrent() bool
	// FrameSize is the number of values of a sub-environment's frame (its
	// observation's size), or 0 when the sub-environments do not render
	// 8-bit frames and frame mode is unavailable.
	FrameSize() int
	// StartStep validates a step's actions, refusing a bad batch before
	// any sub-environment steps, and sizes out's slices for NumEnvs rows.
	StartStep(actions [][]float64, out *VectorStep, frames bool) error
	// StepRange steps sub-environments [lo, hi) with their actions,
	// filling rows [lo, hi) of out as StepInto does (an ended episode's
	// sub-environment starts its next one). Call it after StartStep, for
	// each sub-environment once.
	StepRange(actions [][]float64, out *VectorStep, lo, hi int, frames bool) error
}

// frameEnv is a built-in environment whose observation is an 8-bit frame
// it renders: with a nil obs, stepInto and resetInto leave the frame
// unwidened, for Frame to hand out.
type frameEnv interface {
	flatEnv
	Frame() []uint8
}

// Concurrent implements RangeStepper: only built-in sub-environments.
func (v *serialVector) Concurrent() bool { return v.flat != nil }

// FrameSize implements RangeStepper.
func (v *serialVector) FrameSize() int {
	if v.frames == nil {
		return 0
	}
	return v.dim
}

// StartStep implements RangeStepper.
func (v *serialVector) StartStep(actions [][]float64, out *VectorStep, frames bool) error {
	if frames && v.frames == nil {
		return fmt.Errorf("envs: frame mode asked of %s, whose observations are not 8-bit frames", v.label())
	}
	if err := v.check(actions); err != nil {
		return err
	}
	n := len(v.envs)
	out.Rewards = resized(out.Rewards, n)
	out.Terminated = resized(out.Terminated, n)
	out.Truncated = resized(out.Truncated, n)
	if frames {
		out.Frames = resized(out.Frames, n)
		out.FinalFrames = resized(out.FinalFrames, n)
		out.Obs, out.FinalObs = nil, nil
	} else {
		out.Obs = resized(out.Obs, n)
		out.FinalObs = resized(out.FinalObs, n)
		out.Frames, out.FinalFrames = nil, nil
	}
	return nil
}

// resized returns xs with length n, reallocating only when its length
// differs (the rows are overwritten by every step).
func resized[T any](xs []T, n int) []T {
	if len(xs) == n {
		return xs
	}
	return make([]T, n)
}

// StepRange implements RangeStepper.
func (v *serialVector) StepRange(actions [][]float64, out *VectorStep, lo, hi int, frames bool) error {
	for i := lo; i < hi; i++ {
		if frames {
			v.stepFrame(i, actions[i], out)
			continue
		}
		obs := v.row(v.obsBuf, i)
		var r float64
		var term, trunc bool
		if v.flat != nil {
			r, term, trunc = v.flat[i].stepInto(actions[i], obs)
		} else {
			s, err := v.envs[i].Step(actions[i])
			if err != nil {
				return fmt.Errorf("envs: step of sub-environment %d: %w", i, err)
			}
			if err := v.checkObs(i, "Step", s.Obs); err != nil {
				return err
			}
			r, term, trunc = s.Reward, s.Terminated, s.Truncated
			copy(obs, s.Obs)
		}
		out.Rewards[i], out.Terminated[i], out.Truncated[i] = r, term, trunc
		out.Obs[i], out.FinalObs[i] = obs, nil
		if term || trunc {
			final := v.row(v.finalBuf, i)
			copy(final, obs)
			out.FinalObs[i] = final
			if v.flat != nil {
				v.autoResetFlat(i, obs)
			} else {
				o, err := v.autoResetEnv(i)
				if err != nil {
					return err
				}
				copy(obs, o)
			}
		}
	}
	return nil
}

// stepFrame steps sub-environment i in frame mode: its frame is handed
// out as rendered, and an ended episode's last frame is copied aside
// before the next episode's first one is rendered over it.
func (v *serialVector) stepFrame(i int, action []float64, out *VectorStep) {
	f := v.frames[i]
	r, term, trunc := f.stepInto(action, nil)
	out.Rewards[i], out.Terminated[i], out.Truncated[i] = r, term, trunc
	out.FinalFrames[i] = nil
	if term || trunc {
		final := v.finalFrames[i]
		if final == nil {
			final = make([]uint8, v.dim)
			v.finalFrames[i] = final
		}
		copy(final, f.Frame())
		out.FinalFrames[i] = final
		v.episodes[i]++
		f.resetInto(AutoResetSeed(v.seeds[i], v.episodes[i]), nil)
	}
	out.Frames[i] = f.Frame()
}
