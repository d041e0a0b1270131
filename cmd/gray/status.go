package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/spf13/cobra"
)

func newStatus() *cobra.Command {
	var (
		cl     clusterFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a cluster's nodes, resources, object store use, tasks and actors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			store, addr, err := cl.dial(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer store.Close()
			st, err := readStatus(ctx, store, addr)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(statusJSONOf(st))
			}
			printStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	f := cmd.Flags()
	cl.add(f)
	f.BoolVar(&asJSON, "json", false, "print JSON (snake_case keys, listed in docs/cluster.md)")
	return cmd
}

// clusterStatus is what `gray status` reports; --json prints it with
// snake_case keys (state.Status).
type clusterStatus struct {
	Address     string
	ReadAt      time.Time // when readStatus began reading
	Nodes       []nodeStatus
	Alive, Dead int
	// Over the live nodes:
	Total, Used              task.Resources
	StoreUsed, StoreCapacity int64
	Tasks, Actors, Workers   int
	// Waiting lists requests that only a node that has not joined yet
	// could run.
	Waiting []task.Resources
	Jobs    []control.JobInfo
}

type nodeStatus struct {
	ID, IP, NodeAddr, ObjectAddr string
	Head, Alive                  bool
	Death                        string `json:",omitempty"`
	// Used is what the running jobs' tasks and actors hold on the node
	// (as their drivers publish it); Leased what the node granted to
	// jobs on other machines (as the node reports it).
	Resources, Used, Leased  task.Resources
	StoreUsed, StoreCapacity int64
	Tasks, Actors, Workers   int
	Waiting                  []task.Resources `json:",omitempty"`
	Heartbeat, Started       time.Time
	info                     control.NodeInfo // the node table's record
}

func readStatus(ctx context.Context, store *control.Redis, addr string) (*clusterStatus, error) {
	readAt := time.Now()
	nodes, err := store.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := store.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	st := &clusterStatus{Address: addr, ReadAt: readAt, Jobs: jobs, Nodes: []nodeStatus{}}
	// What the running jobs hold on each node, as their drivers publish it.
	byNode := map[string]*control.JobNodeLoad{}
	for _, j := range jobs {
		if j.Load == nil || !j.Ended.IsZero() {
			continue
		}
		st.Waiting = append(st.Waiting, j.Load.Waiting...)
		for _, u := range j.Load.Nodes {
			sum := byNode[u.Node]
			if sum == nil {
				sum = &control.JobNodeLoad{Node: u.Node}
				byNode[u.Node] = sum
			}
			addResources(&sum.Used, u.Used)
			sum.Tasks += u.Tasks
			sum.Actors += u.Actors
		}
	}
	for _, n := range nodes {
		l := n.Load
		ns := nodeStatus{
			ID: n.ID, IP: n.IP, NodeAddr: n.NodeAddr, ObjectAddr: n.ObjectAddr, Head: n.Head, Alive: n.Alive,
			Death: n.Death, Resources: n.Resources, Leased: l.Used, StoreUsed: l.StoreUsed, StoreCapacity: l.StoreCapacity,
			Tasks: l.Tasks, Actors: l.Actors, Workers: l.Workers, Waiting: l.Waiting, Heartbeat: n.Heartbeat, Started: n.Started,
			info: n,
		}
		if u := byNode[n.ID]; u != nil && n.Alive {
			addResources(&ns.Used, u.Used)
			ns.Tasks += u.Tasks
			ns.Actors += u.Actors
		}
		st.Nodes = append(st.Nodes, ns)
		l.Used = ns.Used
		l.Tasks, l.Actors = ns.Tasks, ns.Actors
		if !n.Alive {
			st.Dead++
			continue
		}
		st.Alive++
		addResources(&st.Total, n.Resources)
		addResources(&st.Used, l.Used)
		st.StoreUsed += l.StoreUsed
		st.StoreCapacity += l.StoreCapacity
		st.Tasks += l.Tasks
		st.Actors += l.Actors
		st.Workers += l.Workers
		st.Waiting = append(st.Waiting, l.Waiting...)
	}
	return st, nil
}

func addResources(dst *task.Resources, r task.Resources) {
	dst.CPU += r.CPU
	dst.GPU += r.GPU
	for k, v := range r.Custom {
		if dst.Custom == nil {
			dst.Custom = map[string]float64{}
		}
		dst.Custom[k] += v
	}
}

func printStatus(out io.Writer, st *clusterStatus) {
	fmt.Fprintf(out, "Cluster %s: %s alive, %d dead\n", st.Address, plural(st.Alive, "node"), st.Dead)
	fmt.Fprintf(out, "Resources: %s used of %s\n", resText(st.Used), resText(st.Total))
	fmt.Fprintf(out, "Object stores: %s used of %s\n", mib(st.StoreUsed), mib(st.StoreCapacity))
	fmt.Fprintf(out, "Tasks: %d live, actors: %d, workers: %d\n", st.Tasks, st.Actors, st.Workers)
	for _, w := range st.Waiting {
		fmt.Fprintf(out, "Waiting for a node that can hold it (no live node can): a request for %s\n", resText(w))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tIP\tSTATE\tGPUS\tRESOURCES\tUSED\tLEASED\tSTORE\tTASKS\tACTORS")
	for _, n := range st.Nodes {
		state := "alive"
		if !n.Alive {
			state = "dead: " + n.Death
		}
		id := n.ID
		if n.Head {
			id += " (head)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s/%s\t%d\t%d\n", id, n.IP, state, gpuText(n), resText(n.Resources), resText(n.Used),
			resText(n.Leased), mib(n.StoreUsed), mib(n.StoreCapacity), n.Tasks, n.Actors)
	}
	tw.Flush()
	if len(st.Jobs) > 0 {
		fmt.Fprintln(out)
		for _, j := range st.Jobs {
			state := "running"
			if !j.Ended.IsZero() {
				state = "ended"
			}
			failed := ""
			if j.Failed > 0 {
				failed = fmt.Sprintf(" (%d failed)", j.Failed)
			}
			fmt.Fprintf(out, "Job %s (%s, %s): %d tasks submitted, %d finished%s\n", j.ID, j.Driver, state, j.Submitted, j.Finished, failed)
		}
	}
}

// gpuText is a node's GPUs for the GPUS column: those its drivers' tasks
// and actors use, those leased to jobs elsewhere, and how many it has
// ("0/1 used, 1 leased"), or "none" on a node without GPUs, so that a GPU
// host whose GPUs were not found (no NVML, no --num-gpus) shows at once.
func gpuText(n nodeStatus) string {
	if n.Resources.GPU == 0 {
		return "none"
	}
	s := fmt.Sprintf("%g/%g used", n.Used.GPU, n.Resources.GPU)
	if n.Leased.GPU > 0 {
		s += fmt.Sprintf(", %g leased", n.Leased.GPU)
	}
	return s
}

func resText(r task.Resources) string {
	if s := r.String(); s != "" {
		return strings.ReplaceAll(s, " ", ",")
	}
	return "-"
}

func mib(n int64) string { return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20)) }

// plural returns "1 node", "2 nodes".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
