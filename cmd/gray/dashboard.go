package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/dashboard"
	"github.com/gray-ml/gray/runtime/control"
)

func newDashboard() *cobra.Command {
	var logDir, address, host, metric string
	var port int
	var cl clusterFlags
	cmd := &cobra.Command{
		Use:   "dashboard [--logdir ~/gray_results] [--address ADDR|auto] [--cluster IP:PORT|auto] [--host 127.0.0.1] [--port 8265]",
		Short: "Serve the web dashboard: runs, sweeps and, with --address, a session's tasks and timeline",
		Long: `dashboard serves one web page for the runs and sweeps under --logdir: their
status and learning curves, updated as they write. With --address it also shows
the runtime of a session whose process serves a dashboard (train --dashboard):
its workers, tasks, actors, errors and task timeline ("auto": the one on
127.0.0.1:8265). With --cluster (and the cluster's token, as for gray status) it
adds the Cluster page: every driver's nodes, jobs, actors and tasks, as gray list
shows them, with a filter box.

It listens on 127.0.0.1; with --host set to another address it prints a URL
holding a token that every request must carry.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if logDir == "" {
				logDir = os.Getenv("GRAY_LOCAL_DIR")
			}
			if logDir == "" {
				logDir = config.DefaultLocalDir
			}
			opts := dashboard.Options{LogDir: config.ExpandHome(logDir), Host: host, Port: port, Metric: metric}
			if st, err := os.Stat(opts.LogDir); err != nil || !st.IsDir() {
				return fmt.Errorf("log dir %s is not a folder: give --logdir the --local-dir your runs were written to", opts.LogDir)
			}
			if address != "" {
				opts.Runtime = dashboard.RemoteRuntime{Base: dashboard.ResolveAddress(address)}
			}
			if cmd.Flags().Changed("cluster") {
				r, err := dialDashboardCluster(cmd, &cl)
				if err != nil {
					return err
				}
				defer r.Close()
				opts.Cluster = r
			}
			srv, err := dashboard.New(opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dashboard for %s at %s\n(Ctrl-C to stop)\n", filepath.Clean(opts.LogDir), srv.URL())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return srv.Serve(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&logDir, "logdir", "", "folder of experiments and runs (default $GRAY_LOCAL_DIR or ~/gray_results)")
	f.StringVar(&address, "address", "", "a session's dashboard to show the runtime of (host:port, URL, or auto)")
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on; anything but loopback needs the printed token")
	f.IntVar(&port, "port", dashboard.DefaultPort, "port to listen on (-1: any free port)")
	f.StringVar(&metric, "metric", "episode_reward_mean", "result key the runs table shows")
	cl.addAs(f, "cluster")
	f.Lookup("cluster").Usage = "a cluster to show every driver's nodes, jobs, actors and tasks of (its IP:PORT, or auto for the one started on this machine)"
	return cmd
}

func newTimeline() *cobra.Command {
	var address, out string
	cmd := &cobra.Command{
		Use:   "timeline [--address ADDR|auto] -o trace.json",
		Short: "Write a session's recent task events in the Chrome trace format (chrome://tracing, Perfetto)",
		Long: `timeline fetches the task events of a running session from its dashboard (a
process started with train --dashboard, or any program serving
dashboard.SessionRuntime) and writes them as a Chrome trace: one event per task,
one thread per worker.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rt := dashboard.RemoteRuntime{Base: dashboard.ResolveAddress(address)}
			b, err := rt.Get(cmd.Context(), "api/timeline/trace", nil)
			if err != nil {
				return err
			}
			return writeOut(cmd.OutOrStdout(), out, b)
		},
	}
	cmd.Flags().StringVar(&address, "address", "auto", "the session's dashboard (host:port, URL, or auto: 127.0.0.1:8265)")
	cmd.Flags().StringVarP(&out, "output", "o", "trace.json", "file to write (- for standard output)")
	return cmd
}

func writeOut(stdout io.Writer, path string, b []byte) error {
	if path == "-" {
		_, err := stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing the trace: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s: open it in chrome://tracing or https://ui.perfetto.dev\n", path)
	return nil
}

// dialDashboardCluster connects to the cluster --cluster names, with its
// token found as gray status finds it; the dashboard reads it while it
// serves.
func dialDashboardCluster(cmd *cobra.Command, cl *clusterFlags) (*control.Redis, error) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	r, _, err := cl.dial(ctx, cmd.ErrOrStderr())
	if err != nil {
		return nil, fmt.Errorf("--cluster: %w", err)
	}
	return r, nil
}
