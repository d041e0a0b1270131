package node

import (
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/task"
)

// TestDirectHostEnv: a cluster driver's workers on its machine take
// direct calls from other nodes on TCP at the host its workers dial, and
// at none when that host names no machine.
func TestDirectHostEnv(t *testing.T) {
	for _, c := range []struct {
		name              string
		listen, advertise string
		want              []string
	}{
		{"the listener's host", "10.0.0.1:0", "", []string{task.EnvDirectHost + "=10.0.0.1"}},
		{"the advertised host first", "0.0.0.0:0", "10.0.0.7:9000", []string{task.EnvDirectHost + "=10.0.0.7"}},
		{"an IPv6 host", "[fd00::1]:0", "", []string{task.EnvDirectHost + "=fd00::1"}},
		{"unspecified: no machine to other nodes", "0.0.0.0:0", "", nil},
		{"unspecified IPv6", "[::]:0", "", nil},
		{"no host", ":0", "", nil},
		{"not an address", "nonsense", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := directHostEnv(&cluster.DriverNode{Listen: c.listen, Advertise: c.advertise})
			if !slices.Equal(got, c.want) {
				t.Fatalf("directHostEnv(%q, %q) = %q, want %q", c.listen, c.advertise, got, c.want)
			}
		})
	}
}
