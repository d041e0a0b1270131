package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// scalingFilter selects the rows --scaling runs at each CPU count: the
// asynchronous ones, whose rate should grow with cores.
const scalingFilter = "tasks async,actor calls async"

// scalingCPUs parses --scaling-cpus ("2,16"), or when it is empty returns
// 1, 2, 4, … up to the machine's logical CPUs, ending with that count.
func scalingCPUs(list string, machine int) ([]int, error) {
	if list == "" {
		var out []int
		for n := 1; n < machine; n *= 2 {
			out = append(out, n)
		}
		return append(out, machine), nil
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--scaling-cpus %q: want CPU counts of at least 1, comma-separated (like 1,2,4)", list)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("--scaling-cpus %q: give the counts in increasing order, each once (like 1,2,4): each rate is compared with the first count's", list)
		}
		out = append(out, n)
	}
	return out, nil
}

// scalingRun is one CPU count's rows.
type scalingRun struct {
	CPUs int   `json:"cpus"`
	Rows []row `json:"rows"`
}

// runScaling runs the asynchronous rows in a fresh session per CPU count
// (a child process of this executable each, so that one count's workers
// and heap never weigh on the next) and prints, per row, the rate at each
// count, its ratio to linear growth from the first count, and the CPU
// time of the driver and all workers per call.
func runScaling(ctx context.Context, out io.Writer, counts []int, childArgs []string, asJSON bool) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this executable to run each CPU count: %w", err)
	}
	runs := make([]scalingRun, 0, len(counts))
	for _, n := range counts {
		args := append([]string{"microbenchmark", "--json", "--cpus", strconv.Itoa(n), "--filter", scalingFilter}, childArgs...)
		var stdout bytes.Buffer
		c := exec.CommandContext(ctx, exe, args...)
		c.Stdout, c.Stderr = &stdout, os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("--cpus %d: %w", n, err)
		}
		rows, err := childRows(stdout.Bytes())
		if err != nil {
			return fmt.Errorf("--cpus %d: reading its rows: %w", n, err)
		}
		runs = append(runs, scalingRun{CPUs: n, Rows: rows})
		if !asJSON {
			fmt.Fprintf(os.Stderr, "gray microbenchmark --scaling: --cpus %d done\n", n)
		}
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(runs)
	}
	printScaling(out, runs)
	return nil
}

// childRows decodes the rows a child printed with --json. Its session's
// workers print to the same standard output, each line prefixed
// "(worker N) " (a warning of a loaded machine, say), before or after the
// rows: the rows are the JSON array that starts a line.
func childRows(out []byte) ([]row, error) {
	i := 0
	for i < len(out) && out[i] != '[' {
		nl := bytes.IndexByte(out[i:], '\n')
		if nl < 0 {
			return nil, fmt.Errorf("no JSON array of rows in its output (%d bytes)", len(out))
		}
		i += nl + 1
	}
	if i >= len(out) {
		return nil, fmt.Errorf("no JSON array of rows in its output (%d bytes)", len(out))
	}
	var rows []row
	if err := json.NewDecoder(bytes.NewReader(out[i:])).Decode(&rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// printScaling prints one line per row and CPU count column: the rate and
// its ratio to linear growth from the first column (growth in the CPUs
// the machine has: a count beyond them should hold the rate, not grow it), then the row's CPU
// time per call at each count and its ratio to the first column's.
func printScaling(w io.Writer, runs []scalingRun) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(w, "%-48s", fmt.Sprintf("row (logical CPUs of this machine: %d)", runtime.NumCPU()))
	for _, r := range runs {
		fmt.Fprintf(w, " %22s", fmt.Sprintf("--cpus %d", r.CPUs))
	}
	fmt.Fprintln(w)
	first := runs[0]
	for i, base := range first.Rows {
		fmt.Fprintf(w, "%-48s", base.Name+" /s")
		for _, r := range runs {
			x := find(r.Rows, base.Name, i)
			lin := x.Rate / (base.Rate * cores(r.CPUs) / cores(first.CPUs))
			fmt.Fprintf(w, " %22s", fmt.Sprintf("%.0f (%.2f× lin)", x.Rate, lin))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%-48s", "  CPU time per call, driver + workers")
		for _, r := range runs {
			x := find(r.Rows, base.Name, i)
			cell := "—"
			if x.CPUPerUnit > 0 && base.CPUPerUnit > 0 {
				cell = fmt.Sprintf("%.1f µs (%.2f×)", x.CPUPerUnit*1e6, x.CPUPerUnit/base.CPUPerUnit)
			}
			fmt.Fprintf(w, " %22s", cell)
		}
		fmt.Fprintln(w)
		printSplit(w, runs, base.Name, i)
	}
}

// printSplit prints where a row's CPU time per call went at each count:
// the driver's share and the workers', how many workers ran (used CPU or
// were woken) of those alive, and the workers' wake-ups per call.
func printSplit(w io.Writer, runs []scalingRun, name string, i int) {
	for _, line := range []struct {
		label string
		cell  func(s *cpuSplit) string
	}{
		{"    of which driver + workers", func(s *cpuSplit) string {
			return fmt.Sprintf("%.1f + %.1f µs", s.Driver*1e6, s.Workers*1e6)
		}},
		{"    workers that ran; their wake-ups per call", func(s *cpuSplit) string {
			return fmt.Sprintf("%d of %d; %.3f", s.Ran, s.Of, s.Wakeups)
		}},
	} {
		fmt.Fprintf(w, "%-48s", line.label)
		for _, r := range runs {
			cell := "—"
			if x := find(r.Rows, name, i); x.Split != nil {
				cell = line.cell(x.Split)
			}
			fmt.Fprintf(w, " %22s", cell)
		}
		fmt.Fprintln(w)
	}
}

// cores is how many of n CPUs can run at once on this machine: linear
// growth past its logical CPUs (an oversubscribed session) is not to be had.
func cores(n int) float64 { return float64(min(n, runtime.NumCPU())) }

// find returns the row named name, looked for at index i first.
func find(rows []row, name string, i int) row {
	if i < len(rows) && rows[i].Name == name {
		return rows[i]
	}
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	return row{Name: name}
}
