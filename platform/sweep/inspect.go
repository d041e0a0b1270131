package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/tune"
)

// ListOptions choose what List shows.
type ListOptions struct {
	// Columns are result keys to show (nested as info/learner/kl); default
	// episode_reward_mean, timesteps_total, time_total_s.
	Columns []string
	// SortBy is a result key or "trial"; Desc, or a leading "-" on SortBy,
	// sorts descending.
	SortBy string
	Desc   bool
	// Status keeps only trials with this status (TERMINATED, ERROR, ...).
	Status string
}

// List prints the trials of the experiment in dir as a table: trial,
// status, iterations, the hyperparameters that differ between trials, and
// the chosen result columns.
func List(w io.Writer, dir string, opts ListOptions) error {
	trials, err := tune.LoadTrials(dir)
	if err != nil {
		return err
	}
	if len(opts.Columns) == 0 {
		opts.Columns = []string{"episode_reward_mean", "timesteps_total", "time_total_s"}
	}
	if opts.Status != "" {
		kept := trials[:0]
		for _, t := range trials {
			if strings.EqualFold(string(t.Status), opts.Status) {
				kept = append(kept, t)
			}
		}
		trials = kept
	}
	if strings.HasPrefix(opts.SortBy, "-") {
		opts.SortBy, opts.Desc = opts.SortBy[1:], true
	}
	if opts.SortBy != "" && opts.SortBy != "trial" {
		key := func(t *tune.TrialSummary) float64 {
			if v, ok := tune.ResultFloat(t.LastResult, opts.SortBy); ok {
				return v
			}
			return math.Inf(-1) // trials without the key sort last when descending
		}
		sort.SliceStable(trials, func(i, j int) bool {
			if opts.Desc {
				return key(trials[i]) > key(trials[j])
			}
			return key(trials[i]) < key(trials[j])
		})
	} else if opts.Desc {
		for i, j := 0, len(trials)-1; i < j; i, j = i+1, j-1 {
			trials[i], trials[j] = trials[j], trials[i]
		}
	}
	params := varying(trials)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := append(append([]string{"trial", "status", "iter"}, params...), opts.Columns...)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, t := range trials {
		flat := runlog.Flatten(t.Config)
		row := []string{t.ID, string(t.Status), fmt.Sprint(t.Iteration)}
		for _, p := range params {
			row = append(row, show(flat[p]))
		}
		for _, c := range opts.Columns {
			if v, ok := tune.ResultFloat(t.LastResult, c); ok {
				row = append(row, fmt.Sprintf("%.5g", v))
			} else {
				row = append(row, "-")
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d trials\n", len(trials))
	return nil
}

// varying lists the flat config keys whose values differ between trials:
// the hyperparameters the sweep searched.
func varying(trials []*tune.TrialSummary) []string {
	seen := map[string]string{}
	differs := map[string]bool{}
	for i, t := range trials {
		for k, v := range runlog.Flatten(t.Config) {
			s := show(v)
			if i > 0 {
				if prev, ok := seen[k]; !ok || prev != s {
					differs[k] = true
				}
			}
			seen[k] = s
		}
	}
	keys := make([]string, 0, len(differs))
	for k := range differs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case float64:
		return fmt.Sprintf("%.5g", x)
	case string:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Best prints the best trial of the experiment in dir by metric (mode max
// or min): its id, folder, metric value, config and latest checkpoint.
func Best(w io.Writer, dir, metric string, mode tune.Mode) (*tune.TrialSummary, error) {
	t, err := tune.BestTrial(dir, metric, mode)
	if err != nil {
		return nil, err
	}
	v, _ := tune.ResultFloat(t.LastResult, metric)
	fmt.Fprintf(w, "best trial: %s (%s = %.6g)\nfolder: %s\n", t.ID, metric, v, t.Dir)
	if n := len(t.Checkpoints); n > 0 {
		fmt.Fprintf(w, "checkpoint: %s\n", t.Checkpoints[n-1].Path)
	} else {
		fmt.Fprintln(w, "checkpoint: none (set checkpoint_freq or checkpoint_at_end)")
	}
	b, err := json.MarshalIndent(t.Config, "", "  ")
	if err != nil {
		return t, err
	}
	fmt.Fprintf(w, "config: %s\n", b)
	return t, nil
}

// ExperimentDir finds an experiment folder: arg itself when it is a
// folder, else arg under localDir (so `train ls cartpole-ppo-sweep` finds
// ~/gray_results/cartpole-ppo-sweep).
func ExperimentDir(arg, localDir string) (string, error) {
	if st, err := os.Stat(arg); err == nil && st.IsDir() {
		return arg, nil
	}
	if !filepath.IsAbs(arg) {
		p := filepath.Join(localDir, arg)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p, nil
		}
		return "", fmt.Errorf("no experiment %q: neither a folder nor a folder under %s (give the experiment's folder, or --local-dir)", arg, localDir)
	}
	return "", fmt.Errorf("no experiment folder %s", arg)
}
