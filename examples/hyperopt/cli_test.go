package hyperopt

import (
	"errors"
	"strings"
	"testing"

	"github.com/gray-ml/gray/models"
)

func TestGPUsFlag(t *testing.T) {
	for _, tc := range []struct {
		gpus int
		want string
	}{{1, "-gpus 0"}, {-1, "must be 0 or more"}} {
		_, err := DataFlags{GPUs: tc.gpus, Threads: 1}.Load()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("-gpus %d: %v; want one line with %q", tc.gpus, err, tc.want)
		}
	}
	var nk *models.NoDeviceKernelError
	if _, err := (DataFlags{GPUs: 1, Threads: 1}).Load(); !errors.As(err, &nk) {
		t.Errorf("-gpus 1: %v; want a NoDeviceKernelError", err)
	}
}
