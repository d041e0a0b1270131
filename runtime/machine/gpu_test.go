package machine

import (
	"errors"
	"fmt"
	"testing"
)

// TestDetected checks what a session is told of ProbeGPUs' answers: no
// NVML is no GPU and no problem, a broken NVML is no GPU and a reason
// (which the driver prints as a warning), a working one its count.
func TestDetected(t *testing.T) {
	broken := errors.New("NVML is installed but nvmlInit_v2 failed with code 9 (is the NVIDIA driver loaded? nvidia-smi says)")
	for _, tc := range []struct {
		name    string
		n       int
		err     error
		want    int
		problem error
	}{
		{"no NVML", 0, fmt.Errorf("GPU detection: %w", ErrNoNVML), 0, nil},
		{"broken NVML", 0, broken, 0, broken},
		{"two GPUs", 2, nil, 2, nil},
		{"none found", 0, nil, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := detected(tc.n, tc.err)
			if n != tc.want || !errors.Is(err, tc.problem) || (err == nil) != (tc.problem == nil) {
				t.Fatalf("detected = %d, %v; want %d, %v", n, err, tc.want, tc.problem)
			}
		})
	}
}
