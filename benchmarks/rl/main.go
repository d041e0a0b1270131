// Command rl is Gray's RL learning benchmark: it trains an algorithm (PPO, A3C, ES, DQN) over several
// seeds and reports, per seed, the steps and wall time until the mean
// return of the last 100 episodes reaches a target (CartPole-v1) or the
// mean return after a step budget (Pendulum-v1), with sampling and SGD
// throughput.
//
// Without -config it uses the tuned settings of the experiment file in
// configs/ for the algorithm and environment (cartpole-ppo.yaml,
// pendulum-ppo.yaml, cartpole-dqn.yaml, ...), read at start: the files are
// the one place those settings live. Run it from the repository root, or
// point -configs at the folder:
//
//	go run ./benchmarks/rl -env CartPole-v1 -seeds 5 -target 475 -max-steps 150000
//	go run ./benchmarks/rl -env Pendulum-v1 -seeds 3 -max-steps 500000
//	go run ./benchmarks/rl -alg DQN -env CartPole-v1 -seeds 3 -target 475 -max-steps 100000
//	go run ./benchmarks/rl -alg DQN -env Acrobot-v1 -seeds 3 -target -100 -max-steps 200000
//	go run ./benchmarks/rl -alg ES -env CartPole-v1 -seeds 3 -target 475 -max-steps 1000000
//	go run ./benchmarks/rl -alg A3C -seeds 3 -target 475 -max-steps 1000000 -config '{"num_workers": 2}'
//	go run ./benchmarks/rl -env StatelessCartPole-v1 -seeds 3 -target 475 -max-steps 500000 -curve lstm.csv -label "PPO+LSTM"
//
// -curve appends every iteration's (label, seed, steps, mean return) to a
// CSV file; -plot OUT.png draws such files (the arguments) with
// platform/plot instead of training.
//
// Algorithms whose workers are actors (A3C, ES; PPO with num_workers > 0) run on
// the gray runtime, started with -num-cpus CPUs.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib"
	_ "github.com/gray-ml/gray/rllib/a3c" // registers A3C
	_ "github.com/gray-ml/gray/rllib/dqn" // registers DQN
	_ "github.com/gray-ml/gray/rllib/es"  // registers ES
	_ "github.com/gray-ml/gray/rllib/ppo" // registers PPO
)

type runResult struct {
	seed        int64
	steps       int64
	wall        time.Duration
	solved      bool
	finalReward float64
	sampleRate  float64
	learnRate   float64
}

func main() {
	gray.ServeIfWorker() // worker processes serve actors and exit here
	env := flag.String("env", "CartPole-v1", "environment")
	alg := flag.String("alg", "PPO", "algorithm")
	seeds := flag.Int("seeds", 5, "number of seeds (1..n)")
	firstSeed := flag.Int64("first-seed", 1, "first seed")
	target := flag.Float64("target", math.NaN(), "stop a seed when episode_reward_mean (last 100 episodes) reaches this")
	maxSteps := flag.Int64("max-steps", 150000, "step budget per seed")
	config := flag.String("config", "", "algorithm config as JSON (default: the config of the matching file in -configs, else {})")
	configsDir := flag.String("configs", "configs", "folder of the experiment files whose configs are the defaults")
	verbose := flag.Bool("v", false, "print every iteration")
	cpus := flag.Int("num-cpus", 0, "CPUs for the gray runtime (0: all)")
	curvePath := flag.String("curve", "", "append each iteration's label, seed, steps and mean return to this CSV file")
	label := flag.String("label", "", "the curve's label (default: the algorithm)")
	plotOut := flag.String("plot", "", "draw the CSV files given as arguments into this PNG and exit")
	title := flag.String("title", "", "the plot's title")
	flag.Parse()
	if *plotOut != "" {
		if err := plotCurves(*plotOut, *title, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "rl:", err)
			os.Exit(1)
		}
		return
	}
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: *cpus, NoGPUs: true}); err != nil {
		fmt.Fprintln(os.Stderr, "rl:", err)
		os.Exit(1)
	}
	defer gray.Shutdown()
	// exit stops the runtime's worker processes before leaving.
	exit := func(code int) {
		_ = gray.Shutdown()
		os.Exit(code)
	}

	var cfg map[string]any
	if *config == "" {
		preset, file, err := presetFor(*configsDir, *alg, *env)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rl:", err)
			exit(2)
		}
		cfg = preset
		if file != "" {
			fmt.Printf("config from %s\n", file)
		}
	} else if err := json.Unmarshal([]byte(*config), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "rl: -config is not valid JSON: %v\n", err)
		exit(2)
	}
	shown, _ := json.Marshal(cfg)
	fmt.Printf("%s on %s, config %s\n", *alg, *env, shown)
	algo, err := rllib.Lookup(*alg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rl:", err)
		exit(2)
	}
	var curve *curveWriter
	if *curvePath != "" {
		if *label == "" {
			*label = *alg
		}
		if curve, err = openCurve(*curvePath, *label); err != nil {
			fmt.Fprintln(os.Stderr, "rl:", err)
			exit(2)
		}
		defer curve.close()
	}
	ctx := context.Background()
	var results []runResult
	for s := int64(0); s < int64(*seeds); s++ {
		seed := *firstSeed + s
		r, err := runSeed(ctx, algo, *env, cfg, seed, *target, *maxSteps, *verbose, curve)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rl: seed %d: %v\n", seed, err)
			exit(1)
		}
		results = append(results, r)
		status := "not solved"
		switch {
		case r.solved:
			status = "solved"
		case math.IsNaN(*target):
			status = "finished"
		}
		fmt.Printf("seed %d: %s at %d steps, %.2f s, final episode_reward_mean %.1f, sampling %.0f steps/s, SGD %.0f steps/s\n",
			seed, status, r.steps, r.wall.Seconds(), r.finalReward, r.sampleRate, r.learnRate)
	}
	summarize(results, *target)
}

func runSeed(ctx context.Context, algo rllib.Algorithm, env string, cfg map[string]any, seed int64, target float64, maxSteps int64, verbose bool, curve *curveWriter) (runResult, error) {
	agent, err := algo.Make(ctx, rllib.Options{Env: env, Seed: seed}, cfg)
	if err != nil {
		return runResult{}, err
	}
	defer agent.Stop()
	start := time.Now()
	r := runResult{seed: seed}
	var sampleSteps, sampleTime, learnSteps, learnTime float64
	for r.steps < maxSteps {
		res, err := agent.Train(ctx)
		if err != nil {
			return r, err
		}
		r.steps = res.TimestepsTotal
		r.finalReward = res.EpisodeRewardMean
		if !math.IsNaN(res.EpisodeRewardMean) {
			if err := curve.add(seed, res.TimestepsTotal, res.EpisodeRewardMean); err != nil {
				return r, fmt.Errorf("-curve: %w", err)
			}
		}
		if t := res.Extra["sample_time_s"]; t > 0 {
			sampleTime += t
			sampleSteps += float64(res.TimestepsThisIter)
		}
		if t := res.Extra["learn_time_s"]; t > 0 {
			learnTime += t
			learnSteps += res.Extra["learn_steps_per_s"] * t
		}
		if verbose && res.Learner["epsilon"] != 0 || verbose && algo.Name == "DQN" {
			fmt.Printf("  iter %d steps %d reward %.1f eps %.3f loss %.4f mean_q %.2f grad steps %.0f %.1fs\n", res.TrainingIteration, res.TimestepsTotal,
				res.EpisodeRewardMean, res.Learner["epsilon"], res.Learner["loss"], res.Learner["mean_q"], res.Learner["num_grad_steps"], time.Since(start).Seconds())
		} else if _, ok := res.Learner["update_ratio"]; verbose && ok {
			fmt.Printf("  iter %d steps %d reward %.1f eval %.1f update_ratio %.4f grad_norm %.3f %.1fs\n", res.TrainingIteration, res.TimestepsTotal,
				res.EpisodeRewardMean, res.Learner["eval_reward_mean"], res.Learner["update_ratio"], res.Learner["grad_norm"], time.Since(start).Seconds())
		} else if verbose {
			fmt.Printf("  iter %d steps %d reward %.1f kl %.4f entropy %.3f lr %.2g ev %.2f %.1fs\n", res.TrainingIteration, res.TimestepsTotal,
				res.EpisodeRewardMean, res.Learner["kl"], res.Learner["entropy"], res.Learner["cur_lr"], res.Learner["explained_variance"], time.Since(start).Seconds())
		}
		if !math.IsNaN(target) && res.EpisodeRewardMean >= target {
			r.solved = true
			break
		}
	}
	r.wall = time.Since(start)
	r.sampleRate = sampleSteps / math.Max(sampleTime, 1e-9)
	r.learnRate = learnSteps / math.Max(learnTime, 1e-9)
	return r, nil
}

func summarize(rs []runResult, target float64) {
	walls := make([]float64, len(rs))
	steps := make([]float64, len(rs))
	finals := make([]string, len(rs))
	solved := 0
	var sr, lr float64
	for i, r := range rs {
		walls[i], steps[i] = r.wall.Seconds(), float64(r.steps)
		finals[i] = fmt.Sprintf("%.1f", r.finalReward)
		if r.solved {
			solved++
		}
		sr += r.sampleRate / float64(len(rs))
		lr += r.learnRate / float64(len(rs))
	}
	if !math.IsNaN(target) {
		fmt.Printf("solved %d/%d; steps median %.0f (min %.0f, max %.0f); wall median %.2f s (min %.2f, max %.2f)\n",
			solved, len(rs), median(steps), minOf(steps), maxOf(steps), median(walls), minOf(walls), maxOf(walls))
	} else {
		fmt.Printf("final episode_reward_mean per seed: %s; wall median %.1f s\n", strings.Join(finals, ", "), median(walls))
	}
	fmt.Printf("mean sampling %.0f steps/s, mean SGD %.0f steps/s\n", sr, lr)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}
