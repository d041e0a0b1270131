package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrUnavailable is wrapped by every error that says this machine cannot
// compute on a GPU (no driver, no device, a missing or unsupported
// library), as opposed to a failure on a working GPU.
var ErrUnavailable = errors.New("no usable CUDA GPU")

// unavailable wraps ErrUnavailable with the cause and the fix.
func unavailable(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, a...))
}

// The oldest versions this backend accepts: CUDA 11.0's driver API,
// cuBLAS 11 and NVRTC 11 (cublasSgemmStridedBatched, nvrtcGetPTX and the
// _v2 driver entry points all exist there).
const (
	minDriverVersion = 11000
	minMajor         = 11
)

// The sonames tried, newest first. A library found only under an older
// soname is reported as unsupported rather than missing.
var (
	cublasNames    = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}
	cublasOldNames = []string{"libcublas.so.10", "libcublas.so.9.2", "libcublas.so.9.0"}
	nvrtcNames     = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0"}
	nvrtcOldNames  = []string{"libnvrtc.so.10.2", "libnvrtc.so.10.1", "libnvrtc.so.10.0"}
)

// libs holds the three libraries' entry points. Every C int is int32,
// every size_t uint64, every handle, pointer and CUdeviceptr uintptr
// (CUdeviceptr is a 64-bit unsigned integer on 64-bit Linux).
type libs struct {
	// libcuda (driver API)
	cuInit               func(flags uint32) int32
	cuDriverGetVersion   func(v *int32) int32
	cuDeviceGetCount     func(n *int32) int32
	cuDeviceGet          func(dev *int32, ordinal int32) int32
	cuDeviceGetAttribute func(v *int32, attr int32, dev int32) int32
	cuDeviceGetName      func(name *byte, n int32, dev int32) int32
	cuPrimaryCtxRetain   func(ctx *uintptr, dev int32) int32
	cuPrimaryCtxRelease  func(dev int32) int32
	cuCtxSetCurrent      func(ctx uintptr) int32
	cuCtxSynchronize     func() int32
	cuMemGetInfo         func(free, total *uint64) int32
	cuMemAlloc           func(ptr *uintptr, size uint64) int32
	cuMemFree            func(ptr uintptr) int32
	cuMemcpyHtoD         func(dst uintptr, src unsafe.Pointer, size uint64) int32
	cuMemcpyDtoH         func(dst unsafe.Pointer, src uintptr, size uint64) int32
	cuMemcpyDtoD         func(dst uintptr, src uintptr, size uint64) int32
	cuMemsetD32          func(dst uintptr, v uint32, n uint64) int32
	cuModuleLoadData     func(mod *uintptr, image *byte) int32
	cuModuleUnload       func(mod uintptr) int32
	cuModuleGetFunction  func(fn *uintptr, mod uintptr, name *byte) int32
	cuLaunchKernel       func(fn uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params unsafe.Pointer, extra uintptr) int32
	cuGetErrorName       func(res int32, name **byte) int32

	// libcublas
	cublasCreate     func(h *uintptr) int32
	cublasDestroy    func(h uintptr) int32
	cublasGetVersion func(h uintptr, v *int32) int32
	cublasSgemm      func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uintptr, lda int32, b uintptr, ldb int32, beta unsafe.Pointer, c uintptr, ldc int32) int32
	cublasSgemmSB    func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uintptr, lda int32, sa int64, b uintptr, ldb int32, sb int64, beta unsafe.Pointer, c uintptr, ldc int32, sc int64, count int32) int32

	// libnvrtc
	nvrtcVersion          func(major, minor *int32) int32
	nvrtcCreateProgram    func(prog *uintptr, src *byte, name *byte, numHeaders int32, headers uintptr, includeNames uintptr) int32
	nvrtcCompileProgram   func(prog uintptr, numOptions int32, options unsafe.Pointer) int32
	nvrtcGetProgramLogSz  func(prog uintptr, size *uint64) int32
	nvrtcGetProgramLog    func(prog uintptr, log *byte) int32
	nvrtcGetPTXSize       func(prog uintptr, size *uint64) int32
	nvrtcGetPTX           func(prog uintptr, ptx *byte) int32
	nvrtcDestroyProgram   func(prog *uintptr) int32
	nvrtcGetErrorString   func(res int32) string
	driverVersion         int32
	cublasSo, nvrtcSo     string
	nvrtcMajor, nvrtcMinr int32
}

var (
	libsOnce sync.Once
	theLibs  *libs
	libsErr  error
)

// loadLibs opens libcuda, libcublas and libnvrtc once per process. The
// error says which library is missing or too old and what to install.
func loadLibs() (*libs, error) {
	libsOnce.Do(func() {
		defer func() {
			// purego panics when a symbol is missing: a broken or foreign
			// library must give an error, not take the program down.
			if r := recover(); r != nil {
				theLibs, libsErr = nil, unavailable("a CUDA library lacks an entry point this backend needs (%v); install CUDA 11 or newer", r)
			}
		}()
		theLibs, libsErr = openLibs()
	})
	return theLibs, libsErr
}

func openLibs() (*libs, error) {
	if runtime.GOOS != "linux" {
		return nil, unavailable("the CUDA backend runs on Linux only (this is %s); set num_gpus: 0", runtime.GOOS)
	}
	l := &libs{}
	cu, err := purego.Dlopen("libcuda.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, unavailable("no CUDA driver: libcuda.so.1 not found (install the NVIDIA driver, or set num_gpus: 0)")
	}
	reg := func(fp any, h uintptr, name string) { purego.RegisterLibFunc(fp, h, name) }
	reg(&l.cuInit, cu, "cuInit")
	reg(&l.cuDriverGetVersion, cu, "cuDriverGetVersion")
	reg(&l.cuDeviceGetCount, cu, "cuDeviceGetCount")
	reg(&l.cuDeviceGet, cu, "cuDeviceGet")
	reg(&l.cuDeviceGetAttribute, cu, "cuDeviceGetAttribute")
	reg(&l.cuDeviceGetName, cu, "cuDeviceGetName")
	reg(&l.cuPrimaryCtxRetain, cu, "cuDevicePrimaryCtxRetain")
	reg(&l.cuPrimaryCtxRelease, cu, "cuDevicePrimaryCtxRelease_v2")
	reg(&l.cuCtxSetCurrent, cu, "cuCtxSetCurrent")
	reg(&l.cuCtxSynchronize, cu, "cuCtxSynchronize")
	reg(&l.cuMemGetInfo, cu, "cuMemGetInfo_v2")
	reg(&l.cuMemAlloc, cu, "cuMemAlloc_v2")
	reg(&l.cuMemFree, cu, "cuMemFree_v2")
	reg(&l.cuMemcpyHtoD, cu, "cuMemcpyHtoD_v2")
	reg(&l.cuMemcpyDtoH, cu, "cuMemcpyDtoH_v2")
	reg(&l.cuMemcpyDtoD, cu, "cuMemcpyDtoD_v2")
	reg(&l.cuMemsetD32, cu, "cuMemsetD32_v2")
	reg(&l.cuModuleLoadData, cu, "cuModuleLoadData")
	reg(&l.cuModuleUnload, cu, "cuModuleUnload")
	reg(&l.cuModuleGetFunction, cu, "cuModuleGetFunction")
	reg(&l.cuLaunchKernel, cu, "cuLaunchKernel")
	reg(&l.cuGetErrorName, cu, "cuGetErrorName")
	if err := l.checkCU("cuDriverGetVersion", l.cuDriverGetVersion(&l.driverVersion)); err != nil {
		return nil, err
	}
	if l.driverVersion < minDriverVersion {
		return nil, unavailable("the NVIDIA driver supports CUDA %s; this backend needs CUDA 11.0 or newer: update the driver, or set num_gpus: 0", cudaVersion(l.driverVersion))
	}

	bl, name, err := openOne("cuBLAS", cublasNames, cublasOldNames)
	if err != nil {
		return nil, err
	}
	l.cublasSo = name
	reg(&l.cublasCreate, bl, "cublasCreate_v2")
	reg(&l.cublasDestroy, bl, "cublasDestroy_v2")
	reg(&l.cublasGetVersion, bl, "cublasGetVersion_v2")
	reg(&l.cublasSgemm, bl, "cublasSgemm_v2")
	reg(&l.cublasSgemmSB, bl, "cublasSgemmStridedBatched")

	nv, name, err := openOne("NVRTC", nvrtcNames, nvrtcOldNames)
	if err != nil {
		return nil, err
	}
	l.nvrtcSo = name
	reg(&l.nvrtcVersion, nv, "nvrtcVersion")
	reg(&l.nvrtcCreateProgram, nv, "nvrtcCreateProgram")
	reg(&l.nvrtcCompileProgram, nv, "nvrtcCompileProgram")
	reg(&l.nvrtcGetProgramLogSz, nv, "nvrtcGetProgramLogSize")
	reg(&l.nvrtcGetProgramLog, nv, "nvrtcGetProgramLog")
	reg(&l.nvrtcGetPTXSize, nv, "nvrtcGetPTXSize")
	reg(&l.nvrtcGetPTX, nv, "nvrtcGetPTX")
	reg(&l.nvrtcDestroyProgram, nv, "nvrtcDestroyProgram")
	reg(&l.nvrtcGetErrorString, nv, "nvrtcGetErrorString")
	if err := l.checkNVRTC("nvrtcVersion", l.nvrtcVersion(&l.nvrtcMajor, &l.nvrtcMinr)); err != nil {
		return nil, err
	}
	if l.nvrtcMajor < minMajor {
		return nil, unavailable("%s is NVRTC %d.%d; this backend needs CUDA 11 or newer: install a newer CUDA toolkit, or set num_gpus: 0", name, l.nvrtcMajor, l.nvrtcMinr)
	}
	if drv := int32(l.nvrtcMajor*1000 + l.nvrtcMinr*10); drv > l.driverVersion && l.nvrtcMajor*1000 > l.driverVersion {
		// PTX from a newer major toolkit than the driver fails to load
		// (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); say so before compiling.
		return nil, unavailable("NVRTC is CUDA %d.%d but the driver supports only CUDA %s: update the NVIDIA driver or use a CUDA toolkit no newer than it, or set num_gpus: 0",
			l.nvrtcMajor, l.nvrtcMinr, cudaVersion(l.driverVersion))
	}
	return l, nil
}

// openOne opens the first library of names that loads, looking on the
// library path and then in the CUDA toolkit's directories. A library
// found only under one of old's names is an unsupported version.
func openOne(what string, names, old []string) (uintptr, string, error) {
	for _, n := range names {
		for _, p := range candidates(n) {
			if h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
				return h, p, nil
			}
		}
	}
	for _, n := range old {
		for _, p := range candidates(n) {
			if h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil {
				_ = purego.Dlclose(h)
				return 0, "", unavailable("%s %s is too old: this backend needs CUDA 11 or newer (%s); install a newer CUDA toolkit, or set num_gpus: 0", what, p, strings.Join(names, ", "))
			}
		}
	}
	return 0, "", unavailable("%s not found (%s): install the CUDA toolkit 11 or newer, put its lib64 directory on LD_LIBRARY_PATH or set CUDA_HOME, or set num_gpus: 0", what, strings.Join(names, ", "))
}

// candidates is name on the library path, then under CUDA_HOME,
// CUDA_PATH and /usr/local/cuda.
func candidates(name string) []string {
	out := []string{name}
	for _, root := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if root == "" {
			continue
		}
		out = append(out, filepath.Join(root, "lib64", name), filepath.Join(root, "targets", "x86_64-linux", "lib", name))
	}
	return out
}

// cudaVersion formats a CUDA version number (12040) as "12.4".
func cudaVersion(v int32) string { return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10) }

// cString returns s as a NUL-terminated byte slice.
func cString(s string) []byte { return append([]byte(s), 0) }

// goString reads a NUL-terminated C string the library owns (static
// strings such as error names).
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for i := 0; i < 256; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}
