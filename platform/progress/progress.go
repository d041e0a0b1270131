// Package progress formats the one line `train` prints per iteration.
package progress

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gray-ml/gray/platform/runlog"
)

// Line formats one result (flat or nested, as runlog writes it): iteration,
// timesteps, mean/min/max episode reward, mean episode length, steps per
// second of the iteration and elapsed time.
func Line(result map[string]any) string { return LineFrames(result, 1) }

// LineFrames is Line for an environment that emulates framesPerStep frames
// per step (PixelPong-v0's frame skip): above 1, the frames per second
// follow the steps per second.
func LineFrames(result map[string]any, framesPerStep int) string {
	f := func(k string) float64 {
		v, ok := runlog.Numeric(result[k])
		if !ok {
			return math.NaN()
		}
		return v
	}
	rate := math.NaN()
	if dt := f("time_this_iter_s"); dt > 0 {
		rate = f("timesteps_this_iter") / dt
	}
	frames := ""
	if framesPerStep > 1 {
		frames = fmt.Sprintf(" (%s frames/s)", thousands(rate*float64(framesPerStep)))
	}
	return fmt.Sprintf("iter %4s  steps %10s  reward %8s (min %8s, max %8s)  len %7s  %9s steps/s%s  %s",
		integer(f("training_iteration")), thousands(f("timesteps_total")),
		num(f("episode_reward_mean")), num(f("episode_reward_min")), num(f("episode_reward_max")),
		fixed1(f("episode_len_mean")), thousands(rate), frames, Duration(f("time_total_s")))
}

// Duration formats seconds as 42.3s, 3m07s or 1h02m03s.
func Duration(s float64) string {
	if math.IsNaN(s) || s < 0 {
		return "n/a"
	}
	if s < 60 {
		return strconv.FormatFloat(s, 'f', 1, 64) + "s"
	}
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	h, m, sec := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%dh%02dm%02ds", h, m, sec)
	}
	return fmt.Sprintf("%dm%02ds", m, sec)
}

func integer(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strconv.FormatInt(int64(v), 10)
}

func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fixed1(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// thousands formats a count with thousands separators: 1,234,567.
func thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
