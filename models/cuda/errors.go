package cuda

import (
	"errors"
	"fmt"
)

// Result codes this package acts on (cuda.h's CUresult values).
const (
	cuSuccess               = 0
	cuErrOutOfMemory        = 2
	cuErrInsufficientDriver = 35
	cuErrNoDevice           = 100
	cuErrUnsupportedPTX     = 222
)

// Error is a failed CUDA, cuBLAS or NVRTC call: the call's name and the
// code's name, such as "cuMemAlloc_v2: CUDA_ERROR_ILLEGAL_ADDRESS (700)".
type Error struct {
	Call string
	Code int32
	Name string
}

// Error implements error: the call, the CUDA error's name and its code.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code) }

// OutOfMemoryError is an allocation the GPU could not satisfy, with how
// much was asked and how much was free.
type OutOfMemoryError struct {
	What             string
	Asked, Free, All uint64
}

// Error implements error, naming the settings that shrink what the step needs.
func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("out of GPU memory: %s needs %s but %s of %s is free; lower sgd_minibatch_size or train_batch_size, free the GPU of other processes, or set num_gpus: 0",
		e.What, bytesString(e.Asked), bytesString(e.Free), bytesString(e.All))
}

func bytesString(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkCU turns a CUresult into an *Error (nil for CUDA_SUCCESS).
func (l *libs) checkCU(call string, r int32) error {
	if r == cuSuccess {
		return nil
	}
	var p *byte
	name := "CUDA_ERROR_UNKNOWN_CODE"
	if l.cuGetErrorName != nil && l.cuGetErrorName(r, &p) == cuSuccess && p != nil {
		name = goString(p)
	}
	return &Error{Call: call, Code: r, Name: name}
}

// cublasStatusNames are cublas_api.h's cublasStatus_t names.
var cublasStatusNames = map[int32]string{
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// checkBLAS turns a cublasStatus_t into an *Error.
func (l *libs) checkBLAS(call string, r int32) error {
	if r == 0 {
		return nil
	}
	name, ok := cublasStatusNames[r]
	if !ok {
		name = "CUBLAS_STATUS_UNKNOWN"
	}
	return &Error{Call: call, Code: r, Name: name}
}

// checkNVRTC turns an nvrtcResult into an *Error.
func (l *libs) checkNVRTC(call string, r int32) error {
	if r == 0 {
		return nil
	}
	name := "NVRTC_ERROR_UNKNOWN"
	if l.nvrtcGetErrorString != nil {
		if s := l.nvrtcGetErrorString(r); s != "" {
			name = s
		}
	}
	return &Error{Call: call, Code: r, Name: name}
}

// IsUnavailable reports whether err says this machine has no usable GPU
// (as opposed to a failure on a working one).
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }
