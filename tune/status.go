package tune

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// StatusRow is one trial in a status snapshot.
type StatusRow struct {
	ID        string
	Status    Status
	Params    map[string]string // the searched hyperparameters, formatted
	Metrics   map[string]string // metric, training_iteration, time_total_s
	Resources Resources
}

// StatusSnapshot is the experiment's state at one moment.
type StatusSnapshot struct {
	Name      string
	Elapsed   time.Duration
	Counts    map[Status]int
	Used      Resources
	Total     Resources
	ParamKeys []string
	Metrics   []string
	Rows      []StatusRow // at most maxRows: running first, then by ID
	Hidden    int         // trials not in Rows
	Final     bool
}

// Reporter shows experiment progress. Report is called from the runner
// loop every ReportInterval and once at the end (Final set).
type Reporter interface {
	Report(s StatusSnapshot)
}

const maxStatusRows = 20

func (r *runner) snapshot(final bool) StatusSnapshot {
	s := StatusSnapshot{
		Name: r.exp.Name, Elapsed: time.Since(r.startWall), Counts: map[Status]int{},
		Used: r.used, Total: r.exp.NodeResources, Final: final,
	}
	var leaves []leaf
	findDomains(r.exp.Space, nil, &leaves)
	for _, l := range leaves {
		s.ParamKeys = append(s.ParamKeys, pathDotted(l.path))
	}
	if r.exp.Metric != "" {
		s.Metrics = append(s.Metrics, r.exp.Metric)
	}
	s.Metrics = append(s.Metrics, "training_iteration", "time_total_s")
	order := make([]*Trial, 0, len(r.trials))
	for _, t := range r.trials {
		s.Counts[t.Status]++
		order = append(order, t)
	}
	rank := func(t *Trial) int {
		switch t.Status {
		case Running:
			return 0
		case Paused, Pending:
			return 1
		}
		return 2
	}
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i]) < rank(order[j]) })
	for i, t := range order {
		if i >= maxStatusRows {
			s.Hidden = len(order) - maxStatusRows
			break
		}
		row := StatusRow{ID: t.ID, Status: t.Status, Params: map[string]string{}, Metrics: map[string]string{}}
		if t.Status == Running {
			row.Resources = t.Resources
		}
		for _, k := range s.ParamKeys {
			if v, ok := Spec(t.Config).Get(k); ok {
				row.Params[k] = formatValue(v)
			}
		}
		for _, k := range s.Metrics {
			if v, ok := t.Metric(k); ok {
				row.Metrics[k] = formatValue(v)
			}
		}
		s.Rows = append(s.Rows, row)
	}
	return s
}

func formatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("%.5g", x)
	case float32:
		return fmt.Sprintf("%.5g", x)
	case string:
		return x
	}
	return show(v)
}

// Format renders the snapshot as a table.
func (s StatusSnapshot) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "== Status == %s  %s  resources %g/%g CPU", s.Name, s.Elapsed.Round(time.Second), s.Used.CPU, s.Total.CPU)
	if s.Total.GPU > 0 {
		fmt.Fprintf(&b, ", %g/%g GPU", s.Used.GPU, s.Total.GPU)
	}
	b.WriteString("\n")
	b.WriteString(s.countLine() + "\n")
	head := append([]string{"trial", "status", "resources"}, s.ParamKeys...)
	head = append(head, s.Metrics...)
	rows := [][]string{head}
	for _, r := range s.Rows {
		res := ""
		if r.Resources != (Resources{}) {
			res = r.Resources.String()
		}
		line := []string{r.ID, string(r.Status), res}
		for _, k := range s.ParamKeys {
			line = append(line, r.Params[k])
		}
		for _, k := range s.Metrics {
			line = append(line, r.Metrics[k])
		}
		rows = append(rows, line)
	}
	writeTable(&b, rows)
	if s.Hidden > 0 {
		fmt.Fprintf(&b, "... %d more trials\n", s.Hidden)
	}
	return b.String()
}

func (s StatusSnapshot) countLine() string {
	var parts []string
	total := 0
	for _, st := range []Status{Running, Pending, Paused, Terminated, Errored} {
		if n := s.Counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
			total += n
		}
	}
	return fmt.Sprintf("trials: %d (%s)", total, strings.Join(parts, ", "))
}

func writeTable(w io.Writer, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) && len(c) > widths[i] {
				widths[i] = len(c)
			}
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			fmt.Fprintf(&line, "%-*s", widths[i], c)
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
	}
}

// TableReporter prints the status table. On a terminal it redraws the
// table in place; otherwise it prints one summary line per update and the
// full table at the end, so logs stay readable.
type TableReporter struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	width    int // terminal columns; longer lines are cut so redraws line up
	lastRows int
}

// NewTableReporter reports to w, detecting whether w is a terminal.
func NewTableReporter(w io.Writer) *TableReporter {
	r := &TableReporter{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.tty = true
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			r.width = cols
		}
	}
	return r
}

// Report implements Reporter.
func (t *TableReporter) Report(s StatusSnapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.tty {
		if s.Final {
			fmt.Fprint(t.w, s.Format())
			return
		}
		fmt.Fprintf(t.w, "[%s] %s  %s, %g/%g CPU in use\n", s.Elapsed.Round(time.Second), s.Name, s.countLine(), s.Used.CPU, s.Total.CPU)
		return
	}
	text := s.Format()
	if t.width > 1 {
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		for i, l := range lines {
			if len(l) >= t.width {
				lines[i] = l[:t.width-1]
			}
		}
		text = strings.Join(lines, "\n") + "\n"
	}
	if t.lastRows > 0 {
		// Move up over the previous table and clear to the end of screen.
		fmt.Fprintf(t.w, "\x1b[%dA\x1b[J", t.lastRows)
	}
	fmt.Fprint(t.w, text)
	t.lastRows = strings.Count(text, "\n")
}
