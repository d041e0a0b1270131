package models_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/spaces"
)

// One PPO step on a CartPole-shaped problem: act, then forward, clipped
// surrogate loss, backward, clip, Adam.
func Example() {
	obsSpace, actSpace := spaces.NewBox(-5, 5, 4), spaces.Discrete{N: 2}
	opts := models.DefaultModelOptions()
	opts.Value = true
	pol, err := models.NewPolicy("CartPole-v1", obsSpace, actSpace, "", opts, 42)
	if err != nil {
		panic(err)
	}
	params := pol.Model.Params()
	opt := models.NewAdam(3e-4)
	rng := rand.New(rand.NewPCG(1, 2))

	// Rollout: 4 environments' observations in, actions and log-probs out.
	obs := [][]float64{{0.1, 0, 0, 0}, {0, 0.1, 0, 0}, {0, 0, 0.1, 0}, {0, 0, 0, 0.1}}
	var a models.Actions
	if err := pol.Act(models.NewTape(), rng, obs, true, &a); err != nil {
		panic(err)
	}
	adv := []float64{1, -1, 0.5, 0.2}
	returns := []float64{1, 0, 1, 1}

	// Training step.
	n := len(obs)
	tape := models.NewTape()
	tape.Reset()
	o := pol.Model.Forward(tape, tape.Const(n, 4, a.Obs))
	logp := pol.Dist.LogLikelihood(tape, o.Out, tape.Const(n, 1, a.Actions))
	ratio := tape.Exp(tape.Sub(logp, tape.Const(n, 1, a.LogP)))
	advT := tape.Const(n, 1, adv)
	surr := tape.Minimum(tape.Mul(ratio, advT), tape.Mul(tape.Clip(ratio, 0.8, 1.2), advT))
	vfLoss := tape.Mean(tape.Square(tape.Sub(o.Value, tape.Const(n, 1, returns))))
	entropy := tape.Mean(pol.Dist.Entropy(tape, o.Out))
	kl := tape.Mean(pol.Dist.KL(tape, tape.Const(n, 2, a.DistInputs), o.Out))
	loss := tape.Add(tape.Sub(tape.Scale(vfLoss, 0.5), tape.Mean(surr)), tape.Scale(entropy, -0.01))

	params.ZeroGrad()
	tape.Backward(loss)
	models.ClipByGlobalNorm(params.Grads(), 0.5)
	if err := opt.Step(params.Flat(), params.Grads()); err != nil {
		panic(err)
	}
	fmt.Printf("ratio at the old policy: %.3f\n", ratio.Data[0])
	fmt.Printf("KL before the step: %.3f\n", kl.Item())
	fmt.Println("weights:", params.Len(), "finite:", params.CheckFinite(true) == nil)
	// Output:
	// ratio at the old policy: 1.000
	// KL before the step: 0.000
	// weights: 9155 finite: true
}
