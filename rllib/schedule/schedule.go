// Package schedule holds value schedules over training time (learning
// rates, exploration rates, coefficients), shared by every algorithm.
package schedule

import (
	"fmt"
	"math"
)

// Piecewise is a piecewise-linear schedule through (timestep, value)
// points, constant before the first point and after the last.
type Piecewise struct {
	points [][2]float64
}

// NewPiecewise checks the points (at least one, timesteps strictly
// increasing, finite values) and returns the schedule.
func NewPiecewise(points [][2]float64) (Piecewise, error) {
	if len(points) == 0 {
		return Piecewise{}, fmt.Errorf("schedule: need at least one [timestep, value] point")
	}
	for i, p := range points {
		if math.IsNaN(p[0]) || math.IsInf(p[0], 0) || math.IsNaN(p[1]) || math.IsInf(p[1], 0) {
			return Piecewise{}, fmt.Errorf("schedule: point %d %v is not finite", i, p)
		}
		if i > 0 && p[0] <= points[i-1][0] {
			return Piecewise{}, fmt.Errorf("schedule: timesteps must increase, but point %d (%v) is not after point %d (%v)",
				i, p[0], i-1, points[i-1][0])
		}
	}
	return Piecewise{points: append([][2]float64(nil), points...)}, nil
}

// Constant is a schedule that is always v.
func Constant(v float64) Piecewise { return Piecewise{points: [][2]float64{{0, v}}} }

// Linear goes from start at timestep 0 to end at timestep steps, then stays
// at end.
func Linear(start, end float64, steps int64) Piecewise {
	if steps <= 0 {
		return Constant(end)
	}
	return Piecewise{points: [][2]float64{{0, start}, {float64(steps), end}}}
}

// Value is the schedule's value at timestep t.
func (p Piecewise) Value(t int64) float64 {
	pts := p.points
	if len(pts) == 0 {
		return 0
	}
	x := float64(t)
	if x <= pts[0][0] {
		return pts[0][1]
	}
	for i := 1; i < len(pts); i++ {
		if x < pts[i][0] {
			a, b := pts[i-1], pts[i]
			frac := (x - a[0]) / (b[0] - a[0])
			return a[1] + frac*(b[1]-a[1])
		}
	}
	return pts[len(pts)-1][1]
}

// LR is a config's learning rate as a function of timesteps: the points
// of its lr_schedule key when it has any (checked by rllib.Training), else lr
// throughout.
func LR(lr float64, points [][2]float64) Piecewise {
	if len(points) == 0 {
		return Constant(lr)
	}
	p, _ := NewPiecewise(points) // checked by rllib.Training
	return p
}
