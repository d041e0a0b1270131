package cluster

import (
	"reflect"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

func TestDriverNodeLocalGrant(t *testing.T) {
	own := task.Resources{CPU: 4, GPU: 2}
	capacity := task.Resources{CPU: 8, GPU: 4}
	for _, tc := range []struct {
		name     string
		c        *DriverNode
		wantCap  task.Resources
		wantGPUs []int
	}{
		{"no cluster", nil, own, nil},
		{"no node on this machine", &DriverNode{LocalGPUs: []int{3}}, own, nil},
		{"node on this machine", &DriverNode{LocalCapacity: &capacity, LocalGPUs: []int{1, 3}}, capacity, []int{1, 3}},
		{"node granting no GPU", &DriverNode{LocalCapacity: &capacity}, capacity, []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Capacity(own); !reflect.DeepEqual(got, tc.wantCap) {
				t.Errorf("Capacity = %v, want %v", got, tc.wantCap)
			}
			got := tc.c.GPUs()
			if !reflect.DeepEqual(got, tc.wantGPUs) {
				t.Errorf("GPUs = %#v, want %#v", got, tc.wantGPUs)
			}
			if tc.c != nil && len(got) > 0 {
				got[0] = -1 // the node owns its copy
				if tc.c.LocalGPUs[0] == -1 {
					t.Error("GPUs returned the config's own slice")
				}
			}
		})
	}
}
