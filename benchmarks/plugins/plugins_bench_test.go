// Package plugins_test benchmarks Gray's plugin boundary: the round trip of
// one call and environment steps per second through Go and Python plugins,
// beside the same environment stepped in-process. Figures are recorded in
// benchmarks/results/plugins.md.
package plugins_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins"
)

var bins string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gray-plugin-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins = dir
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"../../plugins/examples/gridworld", "./cartpole-plugin")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the plugins:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func pythonGrid(b *testing.B) string {
	if err := exec.Command("/usr/bin/python3", "-c", "import grpc").Run(); err != nil {
		b.Skip("/usr/bin/python3 lacks grpcio (apt-get install python3-grpcio)")
	}
	p, _ := filepath.Abs("../../plugins/examples/python-env/gridworld.py")
	return p
}

// stepLoop steps v b.N times with fixed actions that cycle over the action
// space and reports environment steps per second.
func stepLoop(b *testing.B, v envs.Vector) {
	n := v.NumEnvs()
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i)
	}
	if _, err := v.Reset(seeds); err != nil {
		b.Fatal(err)
	}
	k := v.ActionSpace().(envs.Discrete).N
	acts := make([][][]float64, k)
	for a := range acts {
		acts[a] = make([][]float64, n)
		for i := range acts[a] {
			acts[a][i] = []float64{float64((a + i) % k)}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := v.Step(acts[i%k]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "env-steps/s")
}

func open(b *testing.B, path string, n int) envs.Vector {
	return openWith(b, path, n, plugins.Options{Log: io.Discard})
}

func openWith(b *testing.B, path string, n int, opts plugins.Options) envs.Vector {
	v, err := plugins.NewVector(context.Background(), path, nil, n, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { v.Close() })
	return v
}

// socketOnly steps over the fast step socket instead of the shared region.
var socketOnly = plugins.Options{Log: io.Discard, DisableSharedMemory: true}

// BenchmarkRoundTrip is one Step call of one grid-world sub-environment: the
// cost of crossing the plugin boundary and back, through the shared step
// region (the default for Go plugins), over the SDK's fast step socket, and
// over gRPC.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("fast", func(b *testing.B) { stepLoop(b, open(b, filepath.Join(bins, "gridworld"), 1)) })
	b.Run("socket", func(b *testing.B) { stepLoop(b, openWith(b, filepath.Join(bins, "gridworld"), 1, socketOnly)) })
	b.Run("grpc", func(b *testing.B) {
		stepLoop(b, openWith(b, filepath.Join(bins, "gridworld"), 1, plugins.Options{Log: io.Discard, DisableFastStep: true}))
	})
}

var sizes = []int{1, 8, 64}

// BenchmarkEnvSteps compares steps per second of CartPole in-process, CartPole
// through a Go plugin, and the grid world through the Go and Python plugins.
func BenchmarkEnvSteps(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("cartpole-inprocess/n=%d", n), func(b *testing.B) {
			v, err := envs.MakeVector("CartPole-v1", nil, n)
			if err != nil {
				b.Fatal(err)
			}
			defer v.Close()
			stepLoop(b, v)
		})
		b.Run(fmt.Sprintf("cartpole-goplugin/n=%d", n), func(b *testing.B) {
			stepLoop(b, open(b, filepath.Join(bins, "cartpole-plugin"), n))
		})
		b.Run(fmt.Sprintf("cartpole-goplugin-socket/n=%d", n), func(b *testing.B) {
			stepLoop(b, openWith(b, filepath.Join(bins, "cartpole-plugin"), n, socketOnly))
		})
		b.Run(fmt.Sprintf("cartpole-goplugin-grpc/n=%d", n), func(b *testing.B) {
			stepLoop(b, openWith(b, filepath.Join(bins, "cartpole-plugin"), n, plugins.Options{Log: io.Discard, DisableFastStep: true}))
		})
		b.Run(fmt.Sprintf("gridworld-goplugin/n=%d", n), func(b *testing.B) {
			stepLoop(b, open(b, filepath.Join(bins, "gridworld"), n))
		})
		b.Run(fmt.Sprintf("gridworld-pythonplugin/n=%d", n), func(b *testing.B) {
			stepLoop(b, open(b, pythonGrid(b), n))
		})
	}
}

func rllibEnvNames() []string { return envs.Names() }
