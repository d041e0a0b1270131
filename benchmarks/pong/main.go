// Command pong draws and tabulates the two Pong benchmarks of
// benchmarks/results/pixelpong.md: the running reward that
// examples/rl_pong prints, against wall-clock minutes, and the mean return
// of a PPO run on PixelPong-v0 (configs/pixelpong-ppo.yaml), against
// frames.
//
//	go run ./examples/rl_pong --num-cpus 2 > rl_pong.log     # then stop it
//	train -f configs/pixelpong-ppo.yaml --local-dir /tmp/pong  # then stop it
//	go run ./benchmarks/pong -rl-pong rl_pong.log -ppo /tmp/pong/pixelpong-ppo/PPO_PixelPong-v0_... -o benchmarks/pong
//
// It writes rl_pong.png and ppo_pixelpong.png into the -o folder and prints
// the tables.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/gray-ml/gray/platform/plot"
	"github.com/gray-ml/gray/platform/runlog"
)

func main() {
	rlPong := flag.String("rl-pong", "", "output of examples/rl_pong")
	ppo := flag.String("ppo", "", "run folder of a PPO run on PixelPong-v0")
	out := flag.String("o", ".", "folder for the PNG files")
	every := flag.Float64("every", 10, "table row spacing: minutes")
	flag.Parse()
	if *rlPong == "" && *ppo == "" {
		log.Fatal("give -rl-pong LOG and/or -ppo RUN_DIR")
	}
	if *rlPong != "" {
		if err := rlPongCurve(*rlPong, filepath.Join(*out, "rl_pong.png"), *every); err != nil {
			log.Fatal(err)
		}
	}
	if *ppo != "" {
		if err := ppoCurve(*ppo, filepath.Join(*out, "ppo_pixelpong.png"), *every); err != nil {
			log.Fatal(err)
		}
	}
}

// rlPongCurve reads the "Batch N computed K rollouts in S seconds, running
// mean is R" lines.
func rlPongCurve(path, png string, every float64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var c plot.Curve
	minutes, episodes, next := 0.0, 0, 0.0
	fmt.Println("| minutes | episodes | running mean |")
	fmt.Println("| ---: | ---: | ---: |")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var batch, k int
		var secs, running float64
		if !strings.HasPrefix(sc.Text(), "Batch ") {
			continue
		}
		if _, err := fmt.Sscanf(sc.Text(), "Batch %d computed %d rollouts in %g seconds, running mean is %g", &batch, &k, &secs, &running); err != nil {
			return fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		minutes += secs / 60
		episodes += k
		c.X, c.Y = append(c.X, minutes), append(c.Y, running)
		if minutes >= next {
			fmt.Printf("| %.0f | %d | %.2f |\n", minutes, episodes, running)
			next += every
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(c.X) == 0 {
		return fmt.Errorf("%s: no Batch lines", path)
	}
	fmt.Printf("| %.0f | %d | %.2f | (last)\n", minutes, episodes, c.Y[len(c.Y)-1])
	return plot.Save([]plot.Curve{c}, png, plot.Options{
		X: "wall-clock minutes", Metric: "running mean of the episode reward",
		Title: "examples/rl_pong on PixelPong-v0 (2 rollouts in parallel)", Width: 6, Height: 3.5,
	})
}

// ppoCurve reads the run's results: mean return against frames (4 per
// step).
func ppoCurve(dir, png string, every float64) error {
	results, err := runlog.ReadResults(dir)
	if err != nil {
		return err
	}
	var c plot.Curve
	next := 0.0
	fmt.Println("| minutes | steps | frames | mean return | frames/s (iteration) |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: |")
	var last string
	for _, r := range results {
		flat := runlog.Flatten(r)
		steps, _ := runlog.Numeric(flat["timesteps_total"])
		ret, ok := runlog.Numeric(flat["episode_reward_mean"])
		t, _ := runlog.Numeric(flat["time_total_s"])
		dt, _ := runlog.Numeric(flat["time_this_iter_s"])
		n, _ := runlog.Numeric(flat["timesteps_this_iter"])
		if !ok {
			continue
		}
		c.X, c.Y = append(c.X, 4*steps), append(c.Y, ret)
		row := fmt.Sprintf("| %.0f | %.0f | %.0f | %.2f | %.0f |", t/60, steps, 4*steps, ret, 4*n/dt)
		if t/60 >= next {
			fmt.Println(row)
			next += every
		}
		last = row
	}
	if len(c.X) == 0 {
		return fmt.Errorf("%s: no episode returns yet", dir)
	}
	fmt.Println(last, "(last)")
	return plot.Save([]plot.Curve{c}, png, plot.Options{
		X: "frames (4 per step)", Metric: "mean episode return",
		Title: "PPO on PixelPong-v0 (configs/pixelpong-ppo.yaml)", Width: 6, Height: 3.5,
	})
}
