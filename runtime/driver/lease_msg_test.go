package driver

import (
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// A lone driver asking for more CPUs than its node has is told so, not
// that other jobs hold part of the node.
func TestLeaseShortfallMessage(t *testing.T) {
	cpu := func(n float64) task.Resources { return task.Resources{CPU: n} }
	for _, tc := range []struct {
		name                string
		has, asked, granted task.Resources
		want                string
	}{
		{"all granted", cpu(4), cpu(2), cpu(2), ""},
		{"node smaller than asked", cpu(2), cpu(4), cpu(2), "has CPU=2, less than the CPU=4 asked for"},
		{"others hold part", cpu(4), cpu(4), cpu(1), "other jobs hold part of node n1"},
		{"smaller node, others hold part", cpu(2), cpu(4), cpu(1), "other jobs hold part of node n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := leaseShortfall("n1", tc.has, tc.asked, tc.granted)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("message %q, want one saying %q", got, tc.want)
			}
		})
	}
}
