// Command gray is the runtime's command-line tool: start, stop, status
// and list (a cluster's nodes, jobs, actors and tasks), microbenchmark (the
// counterpart of `ray microbenchmark`), dashboard (the web dashboard) and
// timeline (a session's task events as a Chrome trace).
package main

import (
	"os"

	"github.com/gray-ml/gray"
	"github.com/spf13/cobra"
)

func main() {
	if floorChild() { // a child of microbenchmark's physical-limit rows
		return
	}
	// This executable is also the worker program of the sessions it starts.
	gray.ServeIfWorker()
	if err := newRoot().Execute(); err != nil {
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:          "gray",
		Short:        "Gray's runtime tool",
		SilenceUsage: true,
	}
	root.AddCommand(newMicrobenchmark(), newDashboard(), newTimeline())
	root.AddCommand(newStart(), newStop(), newStatus(), newList(), newNode())
	root.SetErr(os.Stderr)
	root.SetOut(os.Stdout)
	return root
}
