package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// Device attribute numbers (cuda.h's CUdevice_attribute).
const (
	attrCCMajor = 75
	attrCCMinor = 76
)

// Device is one GPU with its context, cuBLAS handle and compiled kernels.
// Its methods may be called from any goroutine: each call makes the
// context current on a locked OS thread (a CUDA context is current per
// thread) and calls are serialised.
type Device struct {
	mu     sync.Mutex
	l      *libs
	dev    int32
	ctx    uintptr
	blas   uintptr
	mod    uintptr
	fns    map[string]uintptr
	name   string
	cc     [2]int32
	args   *launchArgs
	scal   *[2]float32 // alpha and beta, read by cuBLAS before it returns
	closed bool
}

// launchArgs is cuLaunchKernel's kernelParams: ptrs[i] points at vals[i],
// which holds argument i (a device pointer, an int32 or a float32 in its
// low bytes; amd64 and arm64 are little-endian). The driver copies the
// values at launch, so one block serves every launch.
type launchArgs struct {
	vals [24]uint64
	ptrs [24]unsafe.Pointer
}

// Open starts the CUDA device with the given ordinal (0 is the first GPU
// CUDA_VISIBLE_DEVICES shows) and compiles the kernels. Its errors wrap
// ErrUnavailable when the machine has no usable GPU.
func Open(ordinal int) (*Device, error) {
	l, err := loadLibs()
	if err != nil {
		return nil, err
	}
	d := &Device{l: l, fns: map[string]uintptr{}, args: &launchArgs{}, scal: &[2]float32{}}
	for i := range d.args.ptrs {
		d.args.ptrs[i] = unsafe.Pointer(&d.args.vals[i])
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := l.cuInit(0); r != cuSuccess {
		if r == cuErrNoDevice {
			return nil, unavailable("the NVIDIA driver found no GPU (cuInit: CUDA_ERROR_NO_DEVICE; check CUDA_VISIBLE_DEVICES), or set num_gpus: 0")
		}
		if r == cuErrInsufficientDriver {
			return nil, unavailable("the NVIDIA driver is older than its CUDA library (cuInit: CUDA_ERROR_INSUFFICIENT_DRIVER): update the driver, or set num_gpus: 0")
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, l.checkCU("cuInit", r))
	}
	var count int32
	if err := l.checkCU("cuDeviceGetCount", l.cuDeviceGetCount(&count)); err != nil {
		return nil, err
	}
	if ordinal < 0 || int32(ordinal) >= count {
		return nil, unavailable("GPU %d asked for, the driver shows %d (CUDA_VISIBLE_DEVICES limits them); set num_gpus: 0 or give the process a GPU", ordinal, count)
	}
	if err := l.checkCU("cuDeviceGet", l.cuDeviceGet(&d.dev, int32(ordinal))); err != nil {
		return nil, err
	}
	name := make([]byte, 256)
	if err := l.checkCU("cuDeviceGetName", l.cuDeviceGetName(&name[0], int32(len(name)), d.dev)); err != nil {
		return nil, err
	}
	d.name = goString(&name[0])
	if err := l.checkCU("cuDeviceGetAttribute", l.cuDeviceGetAttribute(&d.cc[0], attrCCMajor, d.dev)); err != nil {
		return nil, err
	}
	if err := l.checkCU("cuDeviceGetAttribute", l.cuDeviceGetAttribute(&d.cc[1], attrCCMinor, d.dev)); err != nil {
		return nil, err
	}
	// The primary context is the one the CUDA runtime (and so cuBLAS)
	// uses: sharing it keeps cuBLAS and our kernels in one context.
	if err := l.checkCU("cuDevicePrimaryCtxRetain", l.cuPrimaryCtxRetain(&d.ctx, d.dev)); err != nil {
		return nil, err
	}
	if err := l.checkCU("cuCtxSetCurrent", l.cuCtxSetCurrent(d.ctx)); err != nil {
		_ = l.cuPrimaryCtxRelease(d.dev)
		return nil, err
	}
	if err := d.startBLAS(); err != nil {
		_ = l.cuPrimaryCtxRelease(d.dev)
		return nil, err
	}
	if err := d.loadKernels(); err != nil {
		_ = l.cublasDestroy(d.blas)
		_ = l.cuPrimaryCtxRelease(d.dev)
		return nil, err
	}
	return d, nil
}

func (d *Device) startBLAS() error {
	l := d.l
	if err := l.checkBLAS("cublasCreate_v2", l.cublasCreate(&d.blas)); err != nil {
		return err
	}
	var v int32
	if err := l.checkBLAS("cublasGetVersion_v2", l.cublasGetVersion(d.blas, &v)); err != nil {
		_ = l.cublasDestroy(d.blas)
		return err
	}
	// cuBLAS numbers its versions major·10000 + minor·100 + patch (from
	// 11 on; 10.x used major·1000).
	if v < minMajor*10000 {
		_ = l.cublasDestroy(d.blas)
		return unavailable("%s reports cuBLAS version %d; this backend needs cuBLAS 11 or newer: install a newer CUDA toolkit, or set num_gpus: 0", l.cublasSo, v)
	}
	return nil
}

// Name is the GPU's name, such as "NVIDIA H200".
func (d *Device) Name() string { return d.name }

// String describes the device and the libraries in use.
func (d *Device) String() string {
	return fmt.Sprintf("%s (compute %d.%d, driver CUDA %s, %s, NVRTC %d.%d)", d.name, d.cc[0], d.cc[1],
		cudaVersion(d.l.driverVersion), d.l.cublasSo, d.l.nvrtcMajor, d.l.nvrtcMinr)
}

// enter locks the device to this goroutine's OS thread with its context
// current; leave undoes it.
func (d *Device) enter() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errors.New("cuda: the device is closed")
	}
	runtime.LockOSThread()
	if err := d.l.checkCU("cuCtxSetCurrent", d.l.cuCtxSetCurrent(d.ctx)); err != nil {
		d.leave()
		return err
	}
	return nil
}

func (d *Device) leave() {
	runtime.UnlockOSThread()
	d.mu.Unlock()
}

// Close releases the cuBLAS handle, the kernels and the context. Buffers
// must be freed first (their memory goes with the context anyway).
func (d *Device) Close() error {
	if err := d.enter(); err != nil {
		return nil // already closed
	}
	defer d.leave()
	d.closed = true
	errs := []error{
		d.l.checkCU("cuCtxSynchronize", d.l.cuCtxSynchronize()),
		d.l.checkBLAS("cublasDestroy_v2", d.l.cublasDestroy(d.blas)),
	}
	if d.mod != 0 {
		errs = append(errs, d.l.checkCU("cuModuleUnload", d.l.cuModuleUnload(d.mod)))
	}
	errs = append(errs, d.l.checkCU("cuDevicePrimaryCtxRelease_v2", d.l.cuPrimaryCtxRelease(d.dev)))
	return errors.Join(errs...)
}

// Buffer is float32 memory on the device. Its methods and the device's
// operations take the device lock; a Buffer belongs to one Device.
type Buffer struct {
	d   *Device
	ptr uintptr
	n   int
}

// Len is the number of float32 values the buffer holds.
func (b *Buffer) Len() int { return b.n }

// at is the device address of value i.
func (b *Buffer) at(i int) uintptr { return b.ptr + uintptr(i)*4 }

// Alloc allocates n float32 values, zeroed; what names them in an out of
// memory error (an *OutOfMemoryError saying how much was asked and how
// much is free).
func (d *Device) Alloc(what string, n int) (*Buffer, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	return d.alloc(what, n)
}

func (d *Device) alloc(what string, n int) (*Buffer, error) {
	if n <= 0 {
		n = 1
	}
	size := uint64(n) * 4
	var p uintptr
	if r := d.l.cuMemAlloc(&p, size); r != cuSuccess {
		if r == cuErrOutOfMemory {
			var free, total uint64
			_ = d.l.cuMemGetInfo(&free, &total)
			return nil, &OutOfMemoryError{What: what, Asked: size, Free: free, All: total}
		}
		return nil, fmt.Errorf("allocating %s: %w", what, d.l.checkCU("cuMemAlloc_v2", r))
	}
	if err := d.l.checkCU("cuMemsetD32_v2", d.l.cuMemsetD32(p, 0, uint64(n))); err != nil {
		_ = d.l.cuMemFree(p)
		return nil, err
	}
	return &Buffer{d: d, ptr: p, n: n}, nil
}

// Free releases the buffer's memory; a freed buffer must not be used.
func (b *Buffer) Free() error {
	if b == nil || b.ptr == 0 {
		return nil
	}
	d := b.d
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	err := d.l.checkCU("cuMemFree_v2", d.l.cuMemFree(b.ptr))
	b.ptr, b.n = 0, 0
	return err
}

// MemInfo returns the device's free and total memory in bytes.
func (d *Device) MemInfo() (free, total uint64, err error) {
	if err := d.enter(); err != nil {
		return 0, 0, err
	}
	defer d.leave()
	err = d.l.checkCU("cuMemGetInfo_v2", d.l.cuMemGetInfo(&free, &total))
	return free, total, err
}

// Upload copies src into the buffer from value off on, narrowing each
// value to float32.
func (b *Buffer) Upload(off int, src []float64) error {
	if len(src) == 0 {
		return nil
	}
	tmp := make([]float32, len(src))
	for i, v := range src {
		tmp[i] = float32(v)
	}
	return b.Upload32(off, tmp)
}

// Upload32 copies src into the buffer from value off on.
func (b *Buffer) Upload32(off int, src []float32) error {
	return b.copyHost("upload", off, src, true)
}

// copyHost copies between host values h and the buffer from value off
// on: up to the device (up), or down from it.
func (b *Buffer) copyHost(what string, off int, h []float32, up bool) error {
	if off < 0 || off+len(h) > b.n {
		return fmt.Errorf("cuda: %s of %d values at %d with a buffer of %d", what, len(h), off, b.n)
	}
	if len(h) == 0 {
		return nil
	}
	d := b.d
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	size := uint64(len(h)) * 4
	if up {
		return d.l.checkCU("cuMemcpyHtoD_v2", d.l.cuMemcpyHtoD(b.at(off), unsafe.Pointer(&h[0]), size))
	}
	return d.l.checkCU("cuMemcpyDtoH_v2", d.l.cuMemcpyDtoH(unsafe.Pointer(&h[0]), b.at(off), size))
}

// Download copies len(dst) values from value off on into dst, widened
// to float64. It waits for the work queued before it, so it reports a
// kernel's failure.
func (b *Buffer) Download(off int, dst []float64) error {
	tmp := make([]float32, len(dst))
	if err := b.Download32(off, tmp); err != nil {
		return err
	}
	for i, v := range tmp {
		dst[i] = float64(v)
	}
	return nil
}

// Download32 is Download into float32 values.
func (b *Buffer) Download32(off int, dst []float32) error {
	return b.copyHost("download", off, dst, false)
}

// copyDtoD copies n values (device lock held).
func (d *Device) copyDtoD(dst, src uintptr, n int) error {
	return d.l.checkCU("cuMemcpyDtoD_v2", d.l.cuMemcpyDtoD(dst, src, uint64(n)*4))
}

// zero clears n values at p (device lock held).
func (d *Device) zero(p uintptr, n int) error {
	return d.l.checkCU("cuMemsetD32_v2", d.l.cuMemsetD32(p, 0, uint64(n)))
}

// Sync waits for the queued work and reports an asynchronous failure.
func (d *Device) Sync() error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	return d.l.checkCU("cuCtxSynchronize", d.l.cuCtxSynchronize())
}

// gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices:
// op(A) is m×k, op(B) k×n, C m×n; ta and tb transpose A (stored k×m) and
// B (stored n×k). cuBLAS is column-major, where a row-major matrix reads
// as its transpose, so it computes Cᵀ = op(B)ᵀ·op(A)ᵀ with the operands
// swapped. Device lock held.
func (d *Device) gemm(ta, tb bool, m, n, k int, alpha float32, a, b uintptr, beta float32, c uintptr) error {
	if m == 0 || n == 0 || k == 0 {
		return nil
	}
	if m > math.MaxInt32 || n > math.MaxInt32 || k > math.MaxInt32 {
		return fmt.Errorf("cuda: gemm %dx%dx%d exceeds cuBLAS's 32-bit sizes", m, n, k)
	}
	opA, lda, opB, ldb := operands(ta, tb, m, n, k)
	d.scal[0], d.scal[1] = alpha, beta
	return d.l.checkBLAS("cublasSgemm_v2", d.l.cublasSgemm(d.blas, opB, opA, int32(n), int32(m), int32(k),
		unsafe.Pointer(&d.scal[0]), b, int32(ldb), a, int32(lda), unsafe.Pointer(&d.scal[1]), c, int32(n)))
}

// gemmBatched is gemm on count matrices at strides sa, sb, sc (values)
// apart. Device lock held.
func (d *Device) gemmBatched(ta, tb bool, m, n, k int, alpha float32, a uintptr, sa int, b uintptr, sb int, beta float32, c uintptr, sc int, count int) error {
	if m == 0 || n == 0 || k == 0 || count == 0 {
		return nil
	}
	opA, lda, opB, ldb := operands(ta, tb, m, n, k)
	d.scal[0], d.scal[1] = alpha, beta
	return d.l.checkBLAS("cublasSgemmStridedBatched", d.l.cublasSgemmSB(d.blas, opB, opA, int32(n), int32(m), int32(k),
		unsafe.Pointer(&d.scal[0]), b, int32(ldb), int64(sb), a, int32(lda), int64(sa),
		unsafe.Pointer(&d.scal[1]), c, int32(n), int64(sc), int32(count)))
}

// operands are cuBLAS's operation (0 CUBLAS_OP_N, 1 CUBLAS_OP_T) and
// leading dimension for row-major A and B of gemm's shapes: a row-major
// matrix's leading dimension is its row length.
func operands(ta, tb bool, m, n, k int) (opA int32, lda int, opB int32, ldb int) {
	lda, ldb = k, n
	if ta {
		opA, lda = 1, m
	}
	if tb {
		opB, ldb = 1, k
	}
	return opA, lda, opB, ldb
}
