// Command gridworld is an example Gray environment plugin: an agent walks a
// square grid from the top-left corner to the goal in the bottom-right
// corner. Build it and train on it:
//
//	go build -o bin/gridworld ./plugins/examples/gridworld
//	train --env plugin:./bin/gridworld --alg PPO
//
// Config keys: "size" (cells per side, default 5) and "max_steps" (episode
// time limit, default 50).
package main

import (
	"fmt"
	"image"
	"image/color"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/sdk"
)

func main() {
	sdk.ServeEnv("GridWorld", newGrid)
}

// grid is the environment: one instance per sub-environment.
type grid struct {
	size, maxSteps int
	x, y, steps    int
	rng            *rand.Rand
	obsSpace       envs.Box
}

func newGrid(cfg envs.Config) (envs.Env, error) {
	g := &grid{size: 5, maxSteps: 50}
	// Numbers arrive as float64 (see envs.NormalizeConfig); ConfigInt
	// accepts those with an integral value.
	for k := range cfg {
		if k != "size" && k != "max_steps" {
			return nil, fmt.Errorf("gridworld: unknown config key %q (known: size, max_steps)", k)
		}
	}
	var err error
	if g.size, err = envs.ConfigInt(cfg, "size", g.size); err != nil {
		return nil, fmt.Errorf("gridworld: %w", err)
	}
	if g.maxSteps, err = envs.ConfigInt(cfg, "max_steps", g.maxSteps); err != nil {
		return nil, fmt.Errorf("gridworld: %w", err)
	}
	if g.size < 2 || g.maxSteps < 1 {
		return nil, fmt.Errorf("gridworld: need size >= 2 and max_steps >= 1, got %d and %d", g.size, g.maxSteps)
	}
	g.obsSpace = envs.NewBox(0, 1, 2)
	return g, nil
}

func (g *grid) ObservationSpace() envs.Space { return g.obsSpace }
func (g *grid) ActionSpace() envs.Space      { return envs.Discrete{N: 4} }

func (g *grid) obs() []float64 {
	d := float64(g.size - 1)
	return []float64{float64(g.x) / d, float64(g.y) / d}
}

// Reset starts at a random cell of the top row, so that seeds matter.
func (g *grid) Reset(seed int64) ([]float64, error) {
	g.rng = rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	g.x, g.y, g.steps = g.rng.IntN(g.size-1), 0, 0
	return g.obs(), nil
}

// Step moves up, right, down or left; walls stop the agent. Each step costs
// 0.01 and reaching the goal pays 1.
func (g *grid) Step(action []float64) (envs.Step, error) {
	if len(action) != 1 {
		return envs.Step{}, fmt.Errorf("gridworld: action must hold one value, got %d", len(action))
	}
	switch action[0] {
	case 0:
		g.y = max(g.y-1, 0)
	case 1:
		g.x = min(g.x+1, g.size-1)
	case 2:
		g.y = min(g.y+1, g.size-1)
	case 3:
		g.x = max(g.x-1, 0)
	default:
		return envs.Step{}, fmt.Errorf("gridworld: action %v is not one of 0, 1, 2, 3", action[0])
	}
	g.steps++
	s := envs.Step{Obs: g.obs(), Reward: -0.01}
	if g.x == g.size-1 && g.y == g.size-1 {
		s.Reward, s.Terminated = 1, true
	} else if g.steps >= g.maxSteps {
		s.Truncated = true
	}
	return s, nil
}

func (g *grid) Close() error { return nil }

// Render draws the grid: 16 pixels a cell, the agent blue, the goal green.
func (g *grid) Render() (image.Image, error) {
	const cell = 16
	img := image.NewRGBA(image.Rect(0, 0, g.size*cell, g.size*cell))
	for py := 0; py < g.size*cell; py++ {
		for px := 0; px < g.size*cell; px++ {
			cx, cy := px/cell, py/cell
			c := color.RGBA{240, 240, 240, 255}
			switch {
			case cx == g.x && cy == g.y:
				c = color.RGBA{30, 80, 220, 255}
			case cx == g.size-1 && cy == g.size-1:
				c = color.RGBA{40, 180, 60, 255}
			case px%cell == 0 || py%cell == 0:
				c = color.RGBA{180, 180, 180, 255}
			}
			img.Set(px, py, c)
		}
	}
	return img, nil
}
