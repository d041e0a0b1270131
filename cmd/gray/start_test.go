package main

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/machine"
)

func TestStartRefusesBadFlags(t *testing.T) {
	t.Setenv("GRAY_SESSION_DIR", filepath.Join(t.TempDir(), "index"))
	t.Setenv("GRAY_TOKEN", "")
	base := startOptions{ip: "127.0.0.1", cpus: 1, port: 0, gpusSet: true}
	for _, tc := range []struct {
		name string
		edit func(o *startOptions)
		want string
	}{
		{"neither", func(o *startOptions) {}, "give --head"},
		{"both", func(o *startOptions) { o.head, o.address = true, "1.2.3.4:5" }, "not both"},
		{"bad ip", func(o *startOptions) { o.head, o.ip = true, "localhost" }, "not an IP address"},
		{"wildcard ip", func(o *startOptions) { o.head, o.ip = true, "0.0.0.0" }, "every interface"},
		{"wildcard ipv6", func(o *startOptions) { o.head, o.ip = true, "::" }, "every interface"},
		{"multicast ip", func(o *startOptions) { o.head, o.ip = true, "224.0.0.1" }, "multicast"},
		{"broadcast ip", func(o *startOptions) { o.head, o.ip = true, "255.255.255.255" }, "broadcast"},
		{"foreign ip", func(o *startOptions) { o.head, o.ip = true, "192.0.2.77" }, "not an address of this machine"},
		{"negative cpus", func(o *startOptions) { o.head, o.cpus = true, -1 }, "must not be negative"},
		{"NaN cpus", func(o *startOptions) { o.head, o.cpus = true, math.NaN() }, "--num-cpus NaN"},
		{"infinite cpus", func(o *startOptions) { o.head, o.cpus = true, math.Inf(1) }, "--num-cpus +Inf"},
		{"infinite gpus", func(o *startOptions) { o.head, o.gpus = true, math.Inf(1) }, "whole number of GPUs"},
		{"bad port", func(o *startOptions) { o.head, o.port = true, 70000 }, "TCP ports"},
		{"negative max-cache", func(o *startOptions) { o.head, o.maxCache = true, -1 }, "--max-cache -1"},
		{"bad resources", func(o *startOptions) { o.head, o.resources = true, "Custom=2" }, "JSON object"},
		{"CPU as custom", func(o *startOptions) { o.head, o.resources = true, `{"CPU": 2}` }, "--num-cpus"},
		{"no token", func(o *startOptions) { o.address = "10.1.2.3:6379" }, "no token"},
		{"bad token", func(o *startOptions) { o.address, o.token = "10.1.2.3:6379", "xyz" }, "64 hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			o.tempDir = t.TempDir()
			tc.edit(&o)
			_, _, err := newSessionFrom(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestStartBuildsTheHeadSession(t *testing.T) {
	t.Setenv("GRAY_SESSION_DIR", filepath.Join(t.TempDir(), "index"))
	o := startOptions{head: true, ip: "127.0.0.1", cpus: 3, gpus: 1, gpusSet: true, resources: `{"Custom": 2}`, tempDir: t.TempDir()}
	s, _, err := newSessionFrom(o)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Head || len(s.Token) != 64 || !strings.HasPrefix(s.Address, "127.0.0.1:") || s.Resources.CPU != 3 ||
		s.Resources.GPU != 1 || s.Resources.Custom["Custom"] != 2 || s.NodeID == "" {
		t.Fatalf("session %+v", s)
	}
}

// TestStartGPUs covers how `gray start` settles the GPUs a node offers,
// with NVML faked: absent, broken, or finding some.
func TestStartGPUs(t *testing.T) {
	t.Setenv("GRAY_SESSION_DIR", filepath.Join(t.TempDir(), "index"))
	noNVML := func() (int, error) { return 0, fmt.Errorf("GPU detection: %w", machine.ErrNoNVML) }
	broken := func() (int, error) { return 0, errors.New("NVML is installed but nvmlInit_v2 failed with code 9") }
	found := func(n int) func() (int, error) { return func() (int, error) { return n, nil } }
	for _, tc := range []struct {
		name    string
		detect  func() (int, error)
		set     bool
		flag    float64
		want    float64
		wantErr string
	}{
		{"no NVML: none", noNVML, false, 0, 0, ""},
		{"NVML finds two", found(2), false, 0, 2, ""},
		{"NVML finds none", found(0), false, 0, 0, ""},
		{"--num-gpus overrides down", found(2), true, 1, 1, ""},
		{"--num-gpus 0 skips a broken NVML", broken, true, 0, 0, ""},
		{"--num-gpus without NVML is taken as given", noNVML, true, 2, 2, ""},
		{"broken NVML names the way out", broken, false, 0, 0, "--num-gpus"},
		{"more than NVML finds", found(1), true, 4, 0, "at most 1"},
		{"negative", found(1), true, -1, 0, "0 or more"},
		{"fractional", found(1), true, 0.5, 0, "whole number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := startOptions{head: true, ip: "127.0.0.1", cpus: 1, tempDir: t.TempDir(),
				gpus: tc.flag, gpusSet: tc.set, detectGPUs: tc.detect}
			s, _, err := newSessionFrom(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Resources.GPU != tc.want {
				t.Fatalf("offers %g GPUs, want %g", s.Resources.GPU, tc.want)
			}
		})
	}
}
