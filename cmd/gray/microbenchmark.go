package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gray-ml/gray"
	"github.com/spf13/cobra"
)

type benchCounter struct{ n int }

var (
	mbNoop    = gray.Func1("microbenchmark.noop", func(ctx context.Context, x int) (int, error) { return x, nil })
	mbCounter = gray.Actor0("microbenchmark.Counter", func(ctx context.Context) (*benchCounter, error) { return &benchCounter{}, nil })
	mbIncr    = gray.Method1(mbCounter, "incr", func(c *benchCounter, ctx context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
	// A process client: an actor that submits no-op tasks from its own
	// worker process, as Ray's multi-client rows do.
	mbClient    = gray.Actor0("microbenchmark.Client", func(ctx context.Context) (*benchCounter, error) { return &benchCounter{}, nil })
	mbSubmitFor = gray.Method1(mbClient, "submitFor", func(c *benchCounter, ctx context.Context, d time.Duration) (int, error) {
		n, err := until(d, func() (float64, error) {
			return asyncBatch(ctx, func(i int) gray.Ref[int] { return mbNoop.Remote(i) })
		})
		return int(n), err
	})
	// callFor calls the counters (round robin, in batches) for d from the
	// client's process: the n:n actor row with process clients.
	mbCallFor = gray.Method2(mbClient, "callFor", func(c *benchCounter, ctx context.Context, hs []gray.Handle[benchCounter], d time.Duration) (int, error) {
		n, err := until(d, func() (float64, error) {
			return asyncBatch(ctx, func(i int) gray.Ref[int] { return mbIncr.Remote(hs[i%len(hs)], 1) })
		})
		return int(n), err
	})
)

// submitTasksFor is a process client's work in the multi-client task row.
func submitTasksFor(h gray.Handle[benchCounter], d time.Duration) gray.Ref[int] {
	return mbSubmitFor.Remote(h, d)
}

// processClients starts k client actors (reserving nothing, like the
// driver's goroutines they stand in for), has each run work for d from its
// own process (work(h, d) starts it on client h and counts what it did),
// and returns the count and the seconds it took (the actors' start left
// out, and the CPU of the pool workers started to replace those the actors
// took: start is called once they are up, stop once their work is done,
// before they are killed).
func processClients(ctx context.Context, k int, d time.Duration, work func(h gray.Handle[benchCounter], d time.Duration) gray.Ref[int], start, stop func()) (tasks, seconds float64, err error) {
	hs := make([]gray.Handle[benchCounter], 0, k)
	defer func() {
		for _, h := range hs {
			_ = gray.Kill(h)
		}
	}()
	warm := make([]gray.Ref[int], 0, k)
	for range k {
		h, err := mbClient.RemoteWith(ctx, gray.ActorOptions{})
		if err != nil {
			return 0, 0, err
		}
		hs = append(hs, h)
		warm = append(warm, work(h, time.Duration(0)))
	}
	if _, err := gray.GetAll(ctx, warm); err != nil {
		return 0, 0, err
	}
	if err := waitPool(ctx); err != nil {
		return 0, 0, err
	}
	start()
	refs := make([]gray.Ref[int], k)
	t0 := time.Now()
	for i, h := range hs {
		refs[i] = work(h, d)
	}
	counts, err := gray.GetAll(ctx, refs)
	seconds = time.Since(t0).Seconds()
	stop()
	if err != nil {
		return 0, 0, err
	}
	for _, n := range counts {
		tasks += float64(n)
	}
	return tasks, seconds, nil
}

// row is one line of the report.
type row struct {
	Name   string  `json:"name"`
	Rate   float64 `json:"rate"`
	Unit   string  `json:"unit"`
	Spread float64 `json:"spread"` // half the range of the trials' rates
	// CPUPerUnit is the CPU time of the driver and all its workers per
	// unit (median over the trials, in seconds); 0 when not measured (a
	// row that times itself, or no /proc).
	CPUPerUnit float64 `json:"cpu_per_unit,omitempty"`
	// Split is where that trial's CPU time went: the driver, the workers,
	// how many of them ran, and how often they were woken.
	Split *cpuSplit `json:"cpu_split,omitempty"`
}

func newMicrobenchmark() *cobra.Command {
	var (
		asJSON   bool
		duration time.Duration
		trials   int
		cpus     int
		filter   string
		noTL     bool
		address  string
		token    string
		scaling  bool
		scaleOn  string
		queued   int
	)
	cmd := &cobra.Command{
		Use:   "microbenchmark",
		Short: "Measure task, actor, put, get and wait rates on this machine",
		Long: "Starts a one-machine gray session and measures the rows of `ray microbenchmark`:\n" +
			"each row runs --trials times for --duration and reports the median rate.\n" +
			"Physical-limit rows measure the machine itself (memory copy, a 64-byte\n" +
			"ping-pong between two processes over a Unix socket pair, process starts),\n" +
			"and ratio rows give the runtime's figures in units of them, alternating\n" +
			"the two loops so that both see the same machine.",
		RunE: func(cmd *cobra.Command, args []string) error {
			// --scaling-cpus alone asks for the scaling view too.
			scaling = scaling || cmd.Flags().Changed("scaling-cpus")
			if err := checkMicroFlags(microFlags{trials: trials, duration: duration, cpus: cpus, queued: queued,
				filter: filter, scaling: scaling, address: address, changed: cmd.Flags().Changed}); err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if scaling {
				counts, err := scalingCPUs(scaleOn, runtime.NumCPU())
				if err != nil {
					return err
				}
				child := []string{"--trials", strconv.Itoa(trials), "--duration", duration.String()}
				if noTL {
					child = append(child, "--no-timeline")
				}
				return runScaling(ctx, cmd.OutOrStdout(), counts, child, asJSON)
			}
			if err := gray.Init(ctx, gray.Options{NumCPUs: cpus, NoGPUs: true, NoTimeline: noTL, Address: address, Token: token}); err != nil {
				return err
			}
			defer gray.Shutdown()
			if err := waitPool(ctx); err != nil {
				return err
			}
			if queued > 0 {
				return queuedProbe(ctx, cmd.OutOrStdout(), queued)
			}
			var rows []row
			for _, b := range benchmarks() {
				if !selected(b.name, filter) {
					continue
				}
				r, err := measure(ctx, b, duration, trials)
				if err != nil {
					return fmt.Errorf("%s: %w", b.name, err)
				}
				rows = append(rows, r)
				if !asJSON {
					printRow(cmd.OutOrStdout(), r)
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the rows as a JSON array")
	cmd.Flags().DurationVar(&duration, "duration", time.Second, "how long each trial of a row runs")
	cmd.Flags().IntVar(&trials, "trials", 3, "trials per row; the median is reported")
	cmd.Flags().IntVar(&cpus, "cpus", 0, "CPUs for the session (0: all logical CPUs)")
	cmd.Flags().StringVar(&filter, "filter", "", "only rows whose name contains this (or one of these, comma-separated)")
	cmd.Flags().BoolVar(&noTL, "no-timeline", false, "turn off task event recording (to measure what it costs)")
	cmd.Flags().StringVar(&address, "address", "", "measure as a driver of the cluster at IP:PORT (\"auto\": the one on this machine; default $GRAY_ADDRESS)")
	cmd.Flags().BoolVar(&scaling, "scaling", false, "run the async rows at 1, 2, 4, … CPUs up to this machine's (see --scaling-cpus), each in a fresh session, with each rate's ratio to linear and the CPU time per call, split between the driver and the workers")
	cmd.Flags().StringVar(&scaleOn, "scaling-cpus", "", "the CPU counts of --scaling, comma-separated and increasing (default 1, 2, 4, … up to all logical CPUs); implies --scaling")
	cmd.Flags().IntVar(&queued, "queued", 0, "instead of the rows: queue this many no-op tasks behind an actor holding every CPU, and print the time, the driver's CPU time and its heap per queued task")
	cmd.Flags().StringVar(&token, "token", "", "the cluster's token (default $GRAY_TOKEN, or found on the head's machine)")
	return cmd
}

// selected reports whether the row name passes filter: empty, or a
// comma-separated list of which the name contains one.
func selected(name, filter string) bool {
	if filter == "" {
		return true
	}
	for _, f := range strings.Split(filter, ",") {
		if f != "" && strings.Contains(name, f) {
			return true
		}
	}
	return false
}

func printRow(w io.Writer, r row) {
	fmt.Fprintf(w, "%-66s %14.2f %s  +- %.2f", r.Name, r.Rate, r.Unit, r.Spread)
	if r.CPUPerUnit > 0 && strings.HasPrefix(r.Unit, "calls") {
		fmt.Fprintf(w, "  (%.1f CPU-µs each)", r.CPUPerUnit*1e6)
	}
	fmt.Fprintln(w)
}

// bench runs once for about d and returns how many units it did, or with
// rate set, the units per second it timed itself (leaving out its setup).
type bench struct {
	name string
	unit string
	run  func(ctx context.Context, d time.Duration) (float64, error)
	rate bool
	// timed, when set instead of run, returns the units done and the
	// seconds they took, its setup left out of both; it calls start once
	// its setup is done, which is where the CPU time measured begins, and
	// stop once its work is done, before its teardown (a killed actor's
	// process that exits while the CPU time is read would count only in
	// part).
	timed func(ctx context.Context, d time.Duration, start, stop func()) (units, seconds float64, err error)
}

func measure(ctx context.Context, b bench, d time.Duration, trials int) (row, error) {
	rates := make([]float64, 0, trials)
	var splits []cpuSplit
	for range trials {
		t0 := time.Now()
		cpu0, cpuErr := readCPU()
		var cpu1 cpuReading
		var cpu1Err error
		stopped := false
		stop := func() {
			cpu1, cpu1Err = readCPU()
			stopped = true
		}
		var n, secs float64
		var err error
		if b.timed != nil {
			n, secs, err = b.timed(ctx, d, func() { cpu0, cpuErr = readCPU() }, stop)
		} else {
			n, err = b.run(ctx, d)
			secs = time.Since(t0).Seconds()
		}
		if err != nil {
			return row{}, err
		}
		if !stopped {
			cpu1, cpu1Err = readCPU()
		}
		if !b.rate && cpuErr == nil && cpu1Err == nil && n > 0 {
			splits = append(splits, split(cpu0, cpu1, n))
		}
		if !b.rate {
			n /= secs
		}
		rates = append(rates, n)
	}
	sort.Float64s(rates)
	r := row{Name: b.name, Rate: rates[len(rates)/2], Unit: b.unit, Spread: (rates[len(rates)-1] - rates[0]) / 2}
	if len(splits) > 0 {
		// The median trial by total, with its split: the parts of one
		// trial add up, medians of each part need not.
		sort.Slice(splits, func(i, j int) bool { return splits[i].Driver+splits[i].Workers < splits[j].Driver+splits[j].Workers })
		m := splits[len(splits)/2]
		r.CPUPerUnit, r.Split = m.Driver+m.Workers, &m
	}
	return r, nil
}

// actorCalls creates k counter actors, calls each once and waits for the
// pool's workers to start (an actor takes an idle pool worker, and the
// pool starts another in its place), so that neither the actors' start
// nor those processes count; then k goroutines call one actor each in
// async batches for about d. It returns the calls done and the seconds
// they took; stop is called before the actors are killed.
func actorCalls(ctx context.Context, k int, d time.Duration, start, stop func()) (float64, float64, error) {
	hs := make([]gray.Handle[benchCounter], k)
	warm := make([]gray.Ref[int], k)
	for i := range hs {
		h, err := mbCounter.Remote(ctx)
		if err != nil {
			return 0, 0, err
		}
		hs[i] = h
		defer gray.Kill(h)
		warm[i] = mbIncr.Remote(h, 1)
	}
	if _, err := gray.GetAll(ctx, warm); err != nil {
		return 0, 0, err
	}
	if err := waitPool(ctx); err != nil {
		return 0, 0, err
	}
	start()
	t0 := time.Now()
	n, err := parallel(k, func(c int) (float64, error) {
		return until(d, func() (float64, error) {
			return asyncBatch(ctx, func(int) gray.Ref[int] { return mbIncr.Remote(hs[c], 1) })
		})
	})
	secs := time.Since(t0).Seconds()
	stop()
	return n, secs, err
}

// until calls step until d has passed and returns the units counted.
func until(d time.Duration, step func() (float64, error)) (float64, error) {
	end := time.Now().Add(d)
	total := 0.0
	for time.Now().Before(end) {
		n, err := step()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func asyncBatch(ctx context.Context, submit func(i int) gray.Ref[int]) (float64, error) {
	const batch = 1000
	refs := make([]gray.Ref[int], batch)
	for i := range refs {
		refs[i] = submit(i)
	}
	_, err := gray.GetAll(ctx, refs)
	return batch, err
}

// parallel runs fn in k goroutines and sums their counts.
func parallel(k int, fn func(i int) (float64, error)) (float64, error) {
	var wg sync.WaitGroup
	counts := make([]float64, k)
	errs := make([]error, k)
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = fn(i)
		}()
	}
	wg.Wait()
	total := 0.0
	for i := range k {
		if errs[i] != nil {
			return 0, errs[i]
		}
		total += counts[i]
	}
	return total, nil
}

const clients = 4

// Names of the rows measured against physical limits.
const (
	rowTasksSync   = "single client tasks sync"
	rowActorSync   = "1:1 actor calls sync"
	rowPingPong    = "64-byte ping-pong, 2 processes, Unix socket (the physical limit)"
	rowActorCreate = "actor creation (each answers one call)"
	rowProcStart   = "process start+exit, all cores (the physical limit)"
	perFloor       = " / ping-pong floor"
	perStart       = " / process starts"
)

// actorBatch is how many actors the creation row starts at once: at
// least twice the machine's CPUs, so that as many creations are in flight
// as the process-start floor runs side by side (one per CPU) for most of
// each batch. Eight at most on the 16-core host kept half its cores idle
// and read as 0.45× the floor.
func actorBatch() int { return max(8, 2*runtime.NumCPU()) }

func benchmarks() []bench {
	return []bench{
		{name: rowTasksSync, unit: "calls/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			return until(d, func() (float64, error) {
				_, err := gray.Get(ctx, mbNoop.Remote(1))
				return 1, err
			})
		}},
		{name: rowTasksSync + perFloor, unit: "x its round trip", rate: true, run: func(ctx context.Context, d time.Duration) (float64, error) {
			return latencyRatio(ctx, d, func() error {
				_, err := gray.Get(ctx, mbNoop.Remote(1))
				return err
			})
		}},
		{name: "single client tasks async", unit: "calls/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			return until(d, func() (float64, error) {
				return asyncBatch(ctx, func(i int) gray.Ref[int] { return mbNoop.Remote(i) })
			})
		}},
		{name: fmt.Sprintf("multi client tasks async (%d clients)", clients), unit: "calls/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			return parallel(clients, func(int) (float64, error) {
				return until(d, func() (float64, error) {
					return asyncBatch(ctx, func(i int) gray.Ref[int] { return mbNoop.Remote(i) })
				})
			})
		}},
		{name: fmt.Sprintf("multi client tasks async (%d process clients)", clients), unit: "calls/s", timed: func(ctx context.Context, d time.Duration, start, stop func()) (float64, float64, error) {
			return processClients(ctx, clients, d, submitTasksFor, start, stop)
		}},
		{name: rowActorSync, unit: "calls/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			h, err := mbCounter.Remote(ctx)
			if err != nil {
				return 0, err
			}
			defer gray.Kill(h)
			return until(d, func() (float64, error) {
				_, err := gray.Get(ctx, mbIncr.Remote(h, 1))
				return 1, err
			})
		}},
		{name: rowActorSync + perFloor, unit: "x its round trip", rate: true, run: func(ctx context.Context, d time.Duration) (float64, error) {
			h, err := mbCounter.Remote(ctx)
			if err != nil {
				return 0, err
			}
			defer gray.Kill(h)
			return latencyRatio(ctx, d, func() error {
				_, err := gray.Get(ctx, mbIncr.Remote(h, 1))
				return err
			})
		}},
		{name: "1:1 actor calls async", unit: "calls/s", timed: func(ctx context.Context, d time.Duration, start, stop func()) (float64, float64, error) {
			return actorCalls(ctx, 1, d, start, stop)
		}},
		{name: fmt.Sprintf("n:n actor calls async (n=%d)", clients), unit: "calls/s", timed: func(ctx context.Context, d time.Duration, start, stop func()) (float64, float64, error) {
			return actorCalls(ctx, clients, d, start, stop)
		}},
		{name: fmt.Sprintf("n:n actor calls async (n=%d process clients)", clients), unit: "calls/s", timed: func(ctx context.Context, d time.Duration, start, stop func()) (float64, float64, error) {
			return actorClients(ctx, clients, d, start, stop)
		}},
		{name: rowActorCreate, unit: "actors/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			return until(d, func() (float64, error) { return createActors(ctx, actorBatch()) })
		}},
		{name: rowProcStart, unit: "processes/s", run: processStarts},
		{name: rowActorCreate + perStart, unit: "x their rate", rate: true, run: func(ctx context.Context, d time.Duration) (float64, error) {
			return rateRatio(d, func(d time.Duration) (float64, error) {
				return until(d, func() (float64, error) { return createActors(ctx, actorBatch()) })
			}, func(d time.Duration) (float64, error) {
				return processStarts(ctx, d)
			})
		}},
		{name: "single client put calls", unit: "calls/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			return until(d, func() (float64, error) {
				_, err := gray.Put(ctx, 7)
				return 1, err
			})
		}},
		{name: "single client get calls", unit: "calls/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			r, err := gray.Put(ctx, 7)
			if err != nil {
				return 0, err
			}
			return until(d, func() (float64, error) {
				_, err := gray.Get(ctx, r)
				return 1, err
			})
		}},
		{name: "single client get calls (64 MiB array, zero-copy)", unit: "calls/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			r, err := gray.Put(ctx, make([]float64, 8<<20))
			if err != nil {
				return 0, err
			}
			return until(d, func() (float64, error) {
				_, err := gray.Get(ctx, r)
				return 1, err
			})
		}},
		{name: rowPingPong, unit: "round trips/s", run: pingPong, rate: true},
		{name: "memcpy bandwidth, 64 MiB (the physical limit)", unit: "GB/s", rate: true, run: func(ctx context.Context, d time.Duration) (float64, error) {
			src, dst := make([]byte, 64<<20), make([]byte, 64<<20)
			for i := range src {
				src[i] = byte(i)
			}
			copy(dst, src) // fault dst's pages in before the clock starts
			n, el, err := timed(d, func() error {
				copy(dst, src)
				return nil
			})
			return n * float64(len(src)) / 1e9 / el.Seconds(), err
		}},
		// The put loops free each object once put, as a program that is done
		// with it should (see gray.Free): the store then reuses its pages.
		// The "dropped" row leaves that to Go's garbage collector.
		{name: "single client put gigabytes", unit: "GB/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			return putLoop(ctx, d, 64<<20, true)
		}},
		{name: "single client put gigabytes (refs dropped, not freed)", unit: "GB/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			return putLoop(ctx, d, 64<<20, false)
		}},
		{name: fmt.Sprintf("multi client put gigabytes (%d clients)", clients), unit: "GB/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			return parallel(clients, func(int) (float64, error) {
				return putLoop(ctx, d, 16<<20, true)
			})
		}},
		{name: "single client wait 1k refs", unit: "calls/s", run: func(ctx context.Context, d time.Duration) (float64, error) {
			refs := make([]gray.AnyRef, 1000)
			for i := range refs {
				r, err := gray.Put(ctx, i)
				if err != nil {
					return 0, err
				}
				refs[i] = r
			}
			return until(d, func() (float64, error) {
				_, _, err := gray.Wait(ctx, refs, len(refs), 0)
				return 1, err
			})
		}},
	}
}

// putLoop puts a size-byte array for d and returns the gigabytes put per
// second; with free, each object is freed as soon as it is put.
func putLoop(ctx context.Context, d time.Duration, size int, free bool) (float64, error) {
	buf := make([]byte, size)
	return until(d, func() (float64, error) {
		r, err := gray.Put(ctx, buf)
		if err == nil && free {
			err = gray.Free(ctx, r)
		}
		return float64(len(buf)) / 1e9, err
	})
}

// createActors creates n actors at once, waits for each to answer one
// call, kills them and returns n.
func createActors(ctx context.Context, n int) (float64, error) {
	hs := make([]gray.Handle[benchCounter], 0, n)
	defer func() {
		for _, h := range hs {
			_ = gray.Kill(h)
		}
	}()
	refs := make([]gray.Ref[int], 0, n)
	for range n {
		h, err := mbCounter.Remote(ctx)
		if err != nil {
			return 0, err
		}
		hs = append(hs, h)
		refs = append(refs, mbIncr.Remote(h, 1))
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		return 0, err
	}
	return float64(n), nil
}
