package machine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/ebitengine/purego"
)

var (
	gpuOnce  sync.Once
	gpuCount int
)

// DetectGPUs returns the number of NVIDIA GPUs NVML reports. NVML is loaded
// at run time; a machine without the library or without GPUs has zero, and
// detection never fails (a broken NVML counts as none: ProbeGPUs says why).
func DetectGPUs() int {
	gpuOnce.Do(func() { gpuCount, _ = ProbeGPUs() })
	return gpuCount
}

// ErrNoNVML is what ProbeGPUs wraps when NVML is not installed: the machine
// has no NVIDIA driver, so no NVIDIA GPU can be used (zero, not an error).
var ErrNoNVML = errors.New("no NVML library (libnvidia-ml.so.1)")

// ProbeGPUs counts the NVIDIA GPUs through NVML. Without the library it
// returns 0 and an error wrapping ErrNoNVML; with a library that fails
// (NVML present, the driver not loaded or mismatched) it returns 0 and an
// error saying so and what to do. It never panics.
func ProbeGPUs() (n int, err error) {
	if runtime.GOOS != "linux" {
		return 0, fmt.Errorf("GPU detection on %s: %w", runtime.GOOS, ErrNoNVML)
	}
	defer func() {
		if r := recover(); r != nil { // a broken driver install must not take the program down
			n, err = 0, fmt.Errorf("NVML failed (%v): check the NVIDIA driver with nvidia-smi", r)
		}
	}()
	lib, err := purego.Dlopen("libnvidia-ml.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoNVML, err)
	}
	var initFn func() int32
	var countFn func(*uint32) int32
	var shutdownFn func() int32
	purego.RegisterLibFunc(&initFn, lib, "nvmlInit_v2")
	purego.RegisterLibFunc(&countFn, lib, "nvmlDeviceGetCount_v2")
	purego.RegisterLibFunc(&shutdownFn, lib, "nvmlShutdown")
	if rc := initFn(); rc != 0 {
		return 0, fmt.Errorf("NVML is installed but nvmlInit_v2 failed with code %d (is the NVIDIA driver loaded? nvidia-smi says)", rc)
	}
	defer shutdownFn()
	var c uint32
	if rc := countFn(&c); rc != 0 {
		return 0, fmt.Errorf("NVML is installed but nvmlDeviceGetCount_v2 failed with code %d (nvidia-smi says why)", rc)
	}
	return int(c), nil
}
