// Package cuda is a GPU backend for package models: the catalog's fully
// connected and convolutional networks, their training losses (PPO, A3C,
// DQN), global-norm clipping and Adam, in float32 on an NVIDIA GPU.
//
// It reaches CUDA without cgo: the driver API (libcuda.so.1), cuBLAS and
// NVRTC are loaded at run time with purego, so `go build` needs neither
// CUDA nor a C compiler, and a binary built with CGO_ENABLED=0 runs on a
// GPU host. The elementwise, reduction, im2col/col2im and loss kernels are
// CUDA C source in this package, compiled by NVRTC for the GPU at hand
// when a Device opens; matrix products go to cublasSgemm.
//
// Where the data lives: a Net holds the weights, their gradients and
// Adam's moments in device buffers for its whole life. PPOLearner.Learn
// uploads one iteration's batch, runs every epoch and minibatch on the
// device (gathering the minibatches there), and the new weights come down
// once, when the caller asks for them.
//
// Errors: a machine without a usable GPU (no driver, no device, a missing
// or too old cuBLAS or NVRTC) gives an error wrapping ErrUnavailable that
// names the cause and the fix; a failed call gives an *Error naming the
// call and the code's name; an allocation the GPU cannot satisfy an
// *OutOfMemoryError with the sizes; a model without GPU kernels (LSTM,
// free_log_std, custom models) a *models.NoDeviceKernelError.
package cuda
