package runner

import (
	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/rllib"
)

// ResultMap turns an agent's result into the nested map the logger writes:
// the learner statistics go under info/learner (as RLlib lays them out) and
// the extra results at the top level, unless one would hide a standard key,
// in which case it stays under extra.
func ResultMap(r rllib.Result) map[string]any {
	m := map[string]any{
		"training_iteration":  r.TrainingIteration,
		"timesteps_total":     r.TimestepsTotal,
		"timesteps_this_iter": r.TimestepsThisIter,
		"episodes_total":      r.EpisodesTotal,
		"episodes_this_iter":  r.EpisodesThisIter,
		"episode_reward_mean": r.EpisodeRewardMean,
		"episode_reward_min":  r.EpisodeRewardMin,
		"episode_reward_max":  r.EpisodeRewardMax,
		"episode_len_mean":    r.EpisodeLenMean,
		"time_this_iter_s":    r.TimeThisIterS,
	}
	if len(r.Learner) > 0 {
		learner := make(map[string]any, len(r.Learner))
		for k, v := range r.Learner {
			learner[k] = v
		}
		m["info"] = map[string]any{"learner": learner}
	}
	var clashing map[string]any
	for k, v := range r.Extra {
		if _, taken := m[k]; taken || runlog.IsBookkeeping(k) {
			if clashing == nil {
				clashing = map[string]any{}
			}
			clashing[k] = v
			continue
		}
		m[k] = v
	}
	if clashing != nil {
		m["extra"] = clashing
	}
	return m
}
