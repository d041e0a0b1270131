package node

import (
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
// detection never fails.
func DetectGPUs() int {
	gpuOnce.Do(func() { gpuCount = detectGPUs() })
	return gpuCount
}

func detectGPUs() (n int) {
	if runtime.GOOS != "linux" {
		return 0
	}
	defer func() {
		if recover() != nil { // a broken driver install must not take the program down
			n = 0
		}
	}()
	lib, err := purego.Dlopen("libnvidia-ml.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0
	}
	var initFn func() int32
	var countFn func(*uint32) int32
	var shutdownFn func() int32
	purego.RegisterLibFunc(&initFn, lib, "nvmlInit_v2")
	purego.RegisterLibFunc(&countFn, lib, "nvmlDeviceGetCount_v2")
	purego.RegisterLibFunc(&shutdownFn, lib, "nvmlShutdown")
	if initFn() != 0 {
		return 0
	}
	defer shutdownFn()
	var c uint32
	if countFn(&c) != 0 {
		return 0
	}
	return int(c)
}
