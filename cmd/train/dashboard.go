package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/platform/dashboard"
	"github.com/gray-ml/gray/runtime/control"
)

// dashboardFlags are --dashboard and --dashboard-port.
type dashboardFlags struct {
	on   bool
	port int
}

func (d *dashboardFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&d.on, "dashboard", false, "serve the web dashboard (runs, this process's tasks and timeline) while training")
	cmd.Flags().IntVar(&d.port, "dashboard-port", dashboard.DefaultPort, "port of --dashboard on 127.0.0.1 (taken: any free one)")
}

// start prints how to watch the runs in localDir and, with --dashboard,
// serves the dashboard from this process until ctx ends or the returned
// stop is called. On a cluster (cl resolved to an address) it adds the
// Cluster page, reading the cluster's Redis as gray dashboard --cluster.
func (d *dashboardFlags) start(ctx context.Context, localDir string, stdout io.Writer, cl clusterFlags) (stop func()) {
	dir := config.ExpandHome(localDir)
	if !d.on {
		fmt.Fprintf(stdout, "watch it: gray dashboard --logdir %s (or train --dashboard)\n", dir)
		return func() {}
	}
	opts := dashboard.Options{LogDir: dir, Port: d.port, Runtime: dashboard.SessionRuntime{}}
	closeCluster := func() {}
	if cl.resolved && cl.address != "" {
		r, err := control.DialRedis(ctx, control.RedisConfig{Addr: cl.address, Password: cl.token}, "")
		if err != nil {
			fmt.Fprintf(stdout, "train: the dashboard has no Cluster page: %v\n", err)
		} else {
			opts.Cluster, closeCluster = r, func() { r.Close() }
		}
	}
	srv, err := dashboard.New(opts)
	if err != nil {
		opts.Port = -1
		if srv, err = dashboard.New(opts); err != nil {
			fmt.Fprintf(stdout, "train: no dashboard: %v\n", err)
			closeCluster()
			return func() {}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx)
	}()
	fmt.Fprintf(stdout, "dashboard: %s\n", srv.URL())
	return func() {
		cancel()
		<-done
		closeCluster()
	}
}
