package tune

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// BestTrial returns the trial of the experiment in dir whose last result
// has the best value of metric, with its config and checkpoints.
func BestTrial(dir, metric string, mode Mode) (*TrialSummary, error) {
	if mode == "" {
		mode = Max
	}
	if !mode.valid() {
		return nil, fmt.Errorf("tune: mode must be %q or %q, got %q", Max, Min, mode)
	}
	trials, err := LoadTrials(dir)
	if err != nil {
		return nil, err
	}
	var best *TrialSummary
	var bestScore float64
	for _, t := range trials {
		v, ok := ResultFloat(t.LastResult, metric)
		if !ok {
			continue
		}
		if s := mode.score(v); best == nil || s > bestScore {
			best, bestScore = t, s
		}
	}
	if best == nil {
		return nil, fmt.Errorf("tune: no trial of %s reported %q", dir, metric)
	}
	return best, nil
}

// ListOptions select, filter and order the trials ListTrials shows.
type ListOptions struct {
	// Sort is a column to order by; a leading "-" sorts descending.
	Sort string
	// Filter keeps trials matching every condition, each "column OP value"
	// with OP one of = != > >= < <=, e.g. "status=TERMINATED",
	// "episode_reward_mean>=400", "config.lr<0.001".
	Filter []string
	// Columns to show (default: trial_id, status, training_iteration, the
	// searched hyperparameters as config.<key>, the experiment's metric,
	// time_total_s). A column is trial_id, status, failures, error, dir,
	// checkpoint, config.<dotted key> or any result key (nested: a/b).
	Columns []string
}

// Table is a rendered trial list.
type Table struct {
	Columns []string
	Rows    [][]string
}

// Write prints the table with aligned columns.
func (t *Table) Write(w io.Writer) {
	writeTable(w, append([][]string{t.Columns}, t.Rows...))
}

// ListTrials lists the trials of the experiment in dir (`train ls`).
func ListTrials(dir string, opts ListOptions) (*Table, error) {
	meta, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	trials, err := LoadTrials(dir)
	if err != nil {
		return nil, err
	}
	cols := opts.Columns
	if len(cols) == 0 {
		cols = []string{"trial_id", "status", "training_iteration"}
		var space map[string]any
		if json.Unmarshal(meta.Space, &space) == nil {
			if parsed, err := ParseSpace(space); err == nil {
				var leaves []leaf
				findDomains(parsed, nil, &leaves)
				for _, l := range leaves {
					cols = append(cols, "config."+pathDotted(l.path))
				}
			}
		}
		if meta.Metric != "" {
			cols = append(cols, meta.Metric)
		}
		cols = append(cols, "time_total_s")
	}
	var conds []condition
	for _, f := range opts.Filter {
		c, ok := parseCond(f)
		if !ok {
			return nil, fmt.Errorf("tune: filter %q must be COLUMN OP VALUE with OP one of = != > >= < <=", f)
		}
		conds = append(conds, c)
	}
	var kept []*TrialSummary
	for _, t := range trials {
		ok := true
		for _, c := range conds {
			v, has := trialColumn(t, c.col)
			if !has || !compare(v, c.op, c.val) {
				ok = false
				break
			}
		}
		if ok {
			kept = append(kept, t)
		}
	}
	if opts.Sort != "" {
		key, desc := strings.TrimPrefix(opts.Sort, "-"), strings.HasPrefix(opts.Sort, "-")
		sort.SliceStable(kept, func(i, j int) bool {
			a, okA := trialColumn(kept[i], key)
			b, okB := trialColumn(kept[j], key)
			if !okA || !okB {
				return okA && !okB // missing values last
			}
			if desc {
				return less(b, a)
			}
			return less(a, b)
		})
	}
	tab := &Table{Columns: cols}
	for _, t := range kept {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i], _ = trialColumn(t, c)
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab, nil
}

type condition struct{ col, op, val string }

func parseCond(s string) (condition, bool) {
	for _, op := range []string{">=", "<=", "!=", "=", ">", "<"} {
		if i := strings.Index(s, op); i > 0 {
			return condition{strings.TrimSpace(s[:i]), op, strings.TrimSpace(s[i+len(op):])}, true
		}
	}
	return condition{}, false
}

func trialColumn(t *TrialSummary, col string) (string, bool) {
	switch col {
	case "trial_id", "id":
		return t.ID, true
	case "status":
		return string(t.Status), true
	case "failures":
		return fmt.Sprint(t.Failures), true
	case "error":
		return t.Error, true
	case "dir":
		return t.Dir, true
	case "checkpoint":
		if n := len(t.Checkpoints); n > 0 {
			return t.Checkpoints[n-1].Path, true
		}
		return "", true
	}
	if strings.HasPrefix(col, "config.") {
		v, ok := Spec(t.Config).Get(col)
		if !ok {
			return "", false
		}
		return formatValue(v), true
	}
	if v, ok := t.LastResult[col]; ok {
		return formatValue(v), true
	}
	if f, ok := ResultFloat(t.LastResult, col); ok {
		return formatValue(f), true
	}
	return "", false
}

func less(a, b string) bool {
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return fa < fb
	}
	return a < b
}

func compare(v, op, want string) bool {
	fv, errV := strconv.ParseFloat(v, 64)
	fw, errW := strconv.ParseFloat(want, 64)
	num := errV == nil && errW == nil
	switch op {
	case "=":
		return v == want || num && fv == fw
	case "!=":
		return !(v == want || num && fv == fw)
	case ">":
		return num && fv > fw
	case ">=":
		return num && fv >= fw
	case "<":
		return num && fv < fw
	case "<=":
		return num && fv <= fw
	}
	return false
}
