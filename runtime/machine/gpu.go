package machine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/ebitengine/purego"
)

var (
	gpuOnce    sync.Once
	gpuCount   int
	gpuProblem error
)

// DetectGPUs returns the number of NVIDIA GPUs NVML reports. NVML is loaded
// at run time; a machine without the library or without GPUs has zero, and
// detection never fails (a broken NVML counts as none: DetectGPUsWhy and
// ProbeGPUs say why).
func DetectGPUs() int {
	n, _ := DetectGPUsWhy()
	return n
}

// DetectGPUsWhy is DetectGPUs with the reason a machine whose NVML is
// installed but failing counts none, for a warning that names the fix;
// the error is nil where NVML worked or is not installed (no NVIDIA
// driver: nothing is wrong). It probes once per process.
func DetectGPUsWhy() (int, error) {
	gpuOnce.Do(func() { gpuCount, gpuProblem = detected(ProbeGPUs()) })
	return gpuCount, gpuProblem
}

// detected turns ProbeGPUs' answer into DetectGPUsWhy's: no NVML is no
// problem, any other failure is one, and either way the count is zero.
func detected(n int, err error) (int, error) {
	switch {
	case errors.Is(err, ErrNoNVML):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return n, nil
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
