package progress

import (
	"math"
	"testing"
)

func TestLine(t *testing.T) {
	got := Line(map[string]any{"training_iteration": int64(3), "timesteps_total": int64(12000), "timesteps_this_iter": int64(4000),
		"episode_reward_mean": 25.314, "episode_reward_min": 9.0, "episode_reward_max": 80.0, "episode_len_mean": 25.31,
		"time_this_iter_s": 0.5, "time_total_s": 125.0})
	want := "iter    3  steps     12,000  reward    25.31 (min     9.00, max    80.00)  len    25.3      8,000 steps/s  2m05s"
	if got != want {
		t.Errorf("Line =\n%q\nwant\n%q", got, want)
	}
	// No episode finished yet: NaN rewards and a missing rate read n/a.
	got = Line(map[string]any{"training_iteration": 1, "episode_reward_mean": math.NaN()})
	want = "iter    1  steps        n/a  reward      n/a (min      n/a, max      n/a)  len     n/a        n/a steps/s  n/a"
	if got != want {
		t.Errorf("Line =\n%q\nwant\n%q", got, want)
	}
}

// With a frame skip, the frames per second follow the steps per second.
func TestLineFrames(t *testing.T) {
	got := LineFrames(map[string]any{"training_iteration": 2, "timesteps_total": 4096, "timesteps_this_iter": 2048,
		"episode_reward_mean": -20.5, "episode_reward_min": -21.0, "episode_reward_max": -20.0, "episode_len_mean": 800,
		"time_this_iter_s": 4.0, "time_total_s": 8.0}, 4)
	want := "iter    2  steps      4,096  reward   -20.50 (min   -21.00, max   -20.00)  len   800.0        512 steps/s (2,048 frames/s)  8.0s"
	if got != want {
		t.Errorf("LineFrames =\n%q\nwant\n%q", got, want)
	}
}

func TestDuration(t *testing.T) {
	for s, want := range map[float64]string{4.26: "4.3s", 59.9: "59.9s", 187: "3m07s", 3723: "1h02m03s"} {
		if got := Duration(s); got != want {
			t.Errorf("Duration(%v) = %s, want %s", s, got, want)
		}
	}
}
