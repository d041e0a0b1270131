package sample

import (
	"errors"
	"fmt"
	"math"
)

// ComputeGAE fills b.Advantages and b.ValueTargets with generalized
// advantage estimates (Schulman et al. 2016) from b.Rewards and b.VPreds:
//
//	delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)
//	A_t     = delta_t + gamma * lambda * A_{t+1}
//	target_t = A_t + V(s_t)
//
// At a terminated row the next value is zero and the recursion restarts. At a
// truncated row or a fragment boundary the next value is b.Bootstrap (the
// value of the observation the trajectory was cut at) and the recursion
// restarts too, so a time limit is not mistaken for a terminal state.
func ComputeGAE(b *Batch, gamma, lambda float64) error {
	if err := b.Validate(); err != nil {
		return err
	}
	n := b.Len()
	if len(b.VPreds) != n {
		return errors.New("sample: ComputeGAE needs value predictions (VPreds) for every row")
	}
	if err := checkDiscount(gamma, lambda); err != nil {
		return err
	}
	b.Advantages = Resize(b.Advantages, n)
	b.ValueTargets = Resize(b.ValueTargets, n)
	var adv float64
	for t := n - 1; t >= 0; t-- {
		var delta float64
		switch {
		case b.Terminated[t]:
			delta = b.Rewards[t] - b.VPreds[t]
			adv = delta
		case b.Truncated[t] || b.Boundary[t] || t == n-1:
			delta = b.Rewards[t] + gamma*b.Bootstrap[t] - b.VPreds[t]
			adv = delta
		default:
			delta = b.Rewards[t] + gamma*b.VPreds[t+1] - b.VPreds[t]
			adv = delta + gamma*lambda*adv
		}
		b.Advantages[t] = adv
		b.ValueTargets[t] = adv + b.VPreds[t]
	}
	return nil
}

// DiscountedReturns fills b.ValueTargets with discounted returns
// (bootstrapped from b.Bootstrap where a trajectory is cut without a terminal
// state) and b.Advantages with the returns minus b.VPreds, or with the
// returns themselves when the batch has no value predictions.
func DiscountedReturns(b *Batch, gamma float64) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if err := checkDiscount(gamma, 1); err != nil {
		return err
	}
	n := b.Len()
	b.Advantages = Resize(b.Advantages, n)
	b.ValueTargets = Resize(b.ValueTargets, n)
	var ret float64
	for t := n - 1; t >= 0; t-- {
		switch {
		case b.Terminated[t]:
			ret = b.Rewards[t]
		case b.Truncated[t] || b.Boundary[t] || t == n-1:
			ret = b.Rewards[t] + gamma*b.Bootstrap[t]
		default:
			ret = b.Rewards[t] + gamma*ret
		}
		b.ValueTargets[t] = ret
		b.Advantages[t] = ret
		if len(b.VPreds) == n {
			b.Advantages[t] -= b.VPreds[t]
		}
	}
	return nil
}

func checkDiscount(gamma, lambda float64) error {
	if !(gamma >= 0 && gamma <= 1) {
		return fmt.Errorf("sample: gamma must be in [0, 1], got %v", gamma)
	}
	if !(lambda >= 0 && lambda <= 1) {
		return fmt.Errorf("sample: lambda must be in [0, 1], got %v", lambda)
	}
	return nil
}

// Standardize shifts and scales xs in place to mean 0 and standard deviation
// 1 (the advantage normalisation of PPO). A constant slice becomes zeros.
func Standardize(xs []float64) {
	if len(xs) == 0 {
		return
	}
	mean, std := MeanStd(xs)
	inv := 0.0
	if std > 1e-8 {
		inv = 1 / std
	}
	for i, x := range xs {
		xs[i] = (x - mean) * inv
	}
}

// MeanStd returns the mean and (population) standard deviation of xs.
func MeanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(len(xs)))
}

// ExplainedVariance is 1 - Var(targets - preds) / Var(targets): 1 for a
// perfect value function, 0 for one no better than a constant, negative for
// worse. It is NaN when the targets have zero variance.
func ExplainedVariance(preds, targets []float64) float64 {
	if len(preds) != len(targets) || len(targets) == 0 {
		return math.NaN()
	}
	_, sy := MeanStd(targets)
	if sy == 0 {
		return math.NaN()
	}
	diff := make([]float64, len(targets))
	for i := range diff {
		diff[i] = targets[i] - preds[i]
	}
	_, sd := MeanStd(diff)
	return 1 - (sd*sd)/(sy*sy)
}
