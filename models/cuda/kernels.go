package cuda

import (
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// kernelSource is compiled by NVRTC when a Device opens. One thread per
// output value unless a kernel says otherwise; sizes that can pass 2^31
// are long long. Layouts are those of package models: images
// height-width-channel, patches (kernel row, kernel column, channel),
// matrices row-major.
const kernelSource = `
#define ACT_RELU 1
#define ACT_TANH 2
#define IDX (blockIdx.x * (long long)blockDim.x + threadIdx.x)

extern "C" {

// patch_source maps value i of the unfolded patches (row: image b,
// output row oh, column ow; column: kernel row kh, kernel column kw,
// channel c) to its image value's index, or -1 for padding.
__device__ long long patch_source(long long i, int H, int W, int C, int KH, int KW, int S,
                                  int PT, int PL, int OH, int OW) {
  long long t = i;
  int c = t % C; t /= C;
  int kw = t % KW; t /= KW;
  int kh = t % KH; t /= KH;
  int ow = t % OW; t /= OW;
  int oh = t % OH; long long b = t / OH;
  int y = oh * S - PT + kh, xx = ow * S - PL + kw;
  if (y < 0 || y >= H || xx < 0 || xx >= W) return -1;
  return ((b * H + y) * W + xx) * C + c;
}

__global__ void im2col(const float* x, float* cols, long long total, int H, int W, int C,
                       int KH, int KW, int S, int PT, int PL, int OH, int OW) {
  long long i = IDX;
  if (i >= total) return;
  long long src = patch_source(i, H, W, C, KH, KW, S, PT, PL, OH, OW);
  cols[i] = src < 0 ? 0.0f : x[src];
}

// col2im adds the patch gradients back onto the image gradient dx.
__global__ void col2im(const float* dcols, float* dx, long long total, int H, int W, int C,
                       int KH, int KW, int S, int PT, int PL, int OH, int OW) {
  long long i = IDX;
  if (i >= total) return;
  long long dst = patch_source(i, H, W, C, KH, KW, S, PT, PL, OH, OW);
  if (dst >= 0) atomicAdd(&dx[dst], dcols[i]);
}

__global__ void add_bias(float* y, const float* b, long long total, int cols) {
  long long i = IDX;
  if (i < total) y[i] += b[i % cols];
}

__global__ void act_fwd(float* y, long long n, int act) {
  long long i = IDX;
  if (i >= n) return;
  if (act == ACT_RELU) y[i] = fmaxf(y[i], 0.0f);
  else if (act == ACT_TANH) y[i] = tanhf(y[i]);
}

// act_bwd turns dy (the gradient of the activation's output y) into the
// gradient of its input.
__global__ void act_bwd(float* dy, const float* y, long long n, int act) {
  long long i = IDX;
  if (i >= n) return;
  if (act == ACT_RELU) { if (!(y[i] > 0.0f)) dy[i] = 0.0f; }
  else if (act == ACT_TANH) dy[i] *= 1.0f - y[i] * y[i];
}

__global__ void fill(float* x, long long n, float v) {
  long long i = IDX;
  if (i < n) x[i] = v;
}

__global__ void gather_rows(float* dst, const float* src, const int* idx, int rows, int cols) {
  long long i = IDX;
  if (i >= (long long)rows * cols) return;
  int r = i / cols, c = i % cols;
  dst[i] = src[(long long)idx[r] * cols + c];
}

// sumsq adds the squares of x into out[0]: a block sums its share, one
// atomic per block.
__global__ void sumsq(const float* x, long long n, float* out) {
  __shared__ float s[256];
  float acc = 0.0f;
  for (long long i = IDX; i < n; i += (long long)gridDim.x * blockDim.x) acc += x[i] * x[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, s[0]);
}

// clip_scale scales g to global norm maxnorm when its norm (the square
// root of normsq[0]) exceeds it, as models.ClipByGlobalNorm does; it also
// adds the norm into stat (for logging) from thread 0.
__global__ void clip_scale(float* g, long long n, const float* normsq, float maxnorm, float* stat) {
  long long i = IDX;
  float norm = sqrtf(normsq[0]);
  if (i == 0 && stat) *stat += norm;
  if (i >= n) return;
  if (maxnorm > 0.0f && norm > maxnorm) g[i] *= maxnorm / norm;
}

// adam is models.Adam's update: step = lr/(1-b1^t), sc2 = sqrt(1/(1-b2^t)).
__global__ void adam(float* w, const float* g, float* m, float* v, long long n,
                     float b1, float b2, float step, float sc2, float eps) {
  long long i = IDX;
  if (i >= n) return;
  float d = g[i];
  float mi = b1 * m[i] + (1.0f - b1) * d;
  float vi = b2 * v[i] + (1.0f - b2) * d * d;
  m[i] = mi; v[i] = vi;
  w[i] -= step * mi / (sqrtf(vi) * sc2 + eps);
}

// log_softmax_rows writes each row's log-softmax (numerically stable:
// shifted by the row's maximum). One thread per row.
__global__ void log_softmax_rows(const float* x, float* y, int rows, int cols, int exp_out) {
  int r = IDX;
  if (r >= rows) return;
  const float* xr = x + (long long)r * cols;
  float* yr = y + (long long)r * cols;
  float mx = xr[0];
  for (int j = 1; j < cols; j++) mx = fmaxf(mx, xr[j]);
  float s = 0.0f;
  for (int j = 0; j < cols; j++) s += expf(xr[j] - mx);
  float lse = mx + logf(s);
  for (int j = 0; j < cols; j++) yr[j] = exp_out ? expf(xr[j] - lse) : xr[j] - lse;
}

// col_sum adds the column sums of x [rows×cols] into out [cols]: one block
// per column.
__global__ void col_sum(const float* x, int rows, int cols, float* out) {
  __shared__ float s[256];
  int c = blockIdx.x;
  float acc = 0.0f;
  for (int r = threadIdx.x; r < rows; r += blockDim.x) acc += x[(long long)r * cols + c];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[c] += s[0];
}

// row_stats computes, per row of categorical logits, the log-softmax
// into lp and the entropy -sum p log p into ent. One thread per row.
__device__ float row_logsoftmax(const float* x, float* lp, int cols) {
  float mx = x[0];
  for (int j = 1; j < cols; j++) mx = fmaxf(mx, x[j]);
  float s = 0.0f;
  for (int j = 0; j < cols; j++) s += expf(x[j] - mx);
  float lse = mx + logf(s);
  float ent = 0.0f;
  for (int j = 0; j < cols; j++) { lp[j] = x[j] - lse; ent -= expf(lp[j]) * lp[j]; }
  return ent;
}

#define MAXA 64

// ppo_loss: PPO's clipped surrogate, KL(old||new), entropy and value loss
// for a categorical policy, their gradients with respect to the logits
// and the value (scaled by inv_n, the means' 1/rows), and per-row terms
// in stats [rows×5]: surrogate, vf error, entropy, KL, total. An action
// outside [0, A) makes the row's terms NaN.
__global__ void ppo_loss(const float* logits, const float* value, const float* act, const float* oldlogp,
                         const float* adv, const float* vtarg, const float* vpred, const float* oldlogits,
                         int rows, int A, float clip, float vfclip, float vfc, float klc, float entc, float inv_n,
                         float* dlogits, float* dvalue, float* stats) {
  int r = IDX;
  if (r >= rows) return;
  float lp[MAXA], lpo[MAXA];
  const float* x = logits + (long long)r * A;
  float ent = row_logsoftmax(x, lp, A);
  row_logsoftmax(oldlogits + (long long)r * A, lpo, A);
  int a = (int)act[r];
  float* st = stats + (long long)r * 5;
  if (a < 0 || a >= A || act[r] != (float)a) {
    float nan = __int_as_float(0x7fc00000);
    for (int k = 0; k < 5; k++) st[k] = nan;
    return;
  }
  float kl = 0.0f;
  for (int j = 0; j < A; j++) kl += expf(lpo[j]) * (lpo[j] - lp[j]);
  float ratio = expf(lp[a] - oldlogp[r]);
  float A_ = adv[r];
  float s1 = ratio * A_;
  float rc = fminf(fmaxf(ratio, 1.0f - clip), 1.0f + clip);
  float s2 = rc * A_;
  float surr = fminf(s1, s2);
  // d surr / d ratio: the unclipped branch when it is the minimum, else
  // the clipped one (zero outside the clip range).
  float dsurr = (s1 <= s2) ? A_ : ((ratio > 1.0f - clip && ratio < 1.0f + clip) ? A_ : 0.0f);
  float v = value[r], t = vtarg[r];
  float e1 = (v - t) * (v - t), verr = e1, dv = 2.0f * (v - t);
  if (vfclip > 0.0f) {
    float vo = vpred[r];
    float dvc = fminf(fmaxf(v - vo, -vfclip), vfclip);
    float vc = vo + dvc;
    float e2 = (vc - t) * (vc - t);
    if (e2 > e1) {
      verr = e2;
      dv = (v - vo > -vfclip && v - vo < vfclip) ? 2.0f * (vc - t) : 0.0f;
    }
  }
  // total = -surr + vfc*verr + klc*kl - entc*ent (each averaged).
  float gl = -dsurr * ratio;  // d(-surr)/d logp[a]
  float* dl = dlogits + (long long)r * A;
  for (int j = 0; j < A; j++) {
    float p = expf(lp[j]);
    float g = gl * ((j == a ? 1.0f : 0.0f) - p);
    g += klc * (p - expf(lpo[j]));
    g += entc * p * (lp[j] + ent);
    dl[j] = g * inv_n;
  }
  dvalue[r] = vfc * dv * inv_n;
  st[0] = surr; st[1] = verr; st[2] = ent; st[3] = kl;
  st[4] = -surr + vfc * verr + klc * kl - entc * ent;
}

// a3c_loss: -logp(a)·adv + vfc·0.5·(v-R)² - entc·entropy per row, its
// gradients scaled by scale (1 for sums, 1/rows for means), and per-row
// terms in stats [rows×4]: policy, value, entropy, total.
__global__ void a3c_loss(const float* logits, const float* value, const float* act, const float* adv,
                         const float* ret, int rows, int A, float vfc, float entc, float scale,
                         float* dlogits, float* dvalue, float* stats) {
  int r = IDX;
  if (r >= rows) return;
  float lp[MAXA];
  float ent = row_logsoftmax(logits + (long long)r * A, lp, A);
  int a = (int)act[r];
  float* st = stats + (long long)r * 4;
  if (a < 0 || a >= A || act[r] != (float)a) {
    float nan = __int_as_float(0x7fc00000);
    for (int k = 0; k < 4; k++) st[k] = nan;
    return;
  }
  float ad = adv[r], e = value[r] - ret[r];
  float* dl = dlogits + (long long)r * A;
  for (int j = 0; j < A; j++) {
    float p = expf(lp[j]);
    float g = -ad * ((j == a ? 1.0f : 0.0f) - p);
    g += entc * p * (lp[j] + ent);
    dl[j] = g * scale;
  }
  dvalue[r] = vfc * e * scale;
  st[0] = -lp[a] * ad; st[1] = 0.5f * e * e; st[2] = ent;
  st[3] = st[0] + vfc * st[1] - entc * ent;
}

// dqn_loss: the Huber loss (threshold delta) of Q(s, a) - target, weighted
// per row (prioritised replay's importance weights; pass 1s otherwise),
// its gradient on Q scaled by inv_n, the TD errors in td, and the
// per-row weighted loss in stats [rows].
__global__ void dqn_loss(const float* q, const float* act, const float* target, const float* weight,
                         int rows, int A, float delta, float inv_n, float* dq, float* td, float* stats) {
  int r = IDX;
  if (r >= rows) return;
  int a = (int)act[r];
  float* dr = dq + (long long)r * A;
  for (int j = 0; j < A; j++) dr[j] = 0.0f;
  if (a < 0 || a >= A || act[r] != (float)a) {
    stats[r] = __int_as_float(0x7fc00000);
    return;
  }
  float x = q[(long long)r * A + a] - target[r];
  float ax = fabsf(x);
  float l = ax <= delta ? 0.5f * x * x : delta * (ax - 0.5f * delta);
  float g = fminf(fmaxf(x, -delta), delta);
  td[r] = x;
  stats[r] = weight[r] * l;
  dr[a] = weight[r] * g * inv_n;
}

}
`

// maxCategorical is the kernels' MAXA: the most actions a categorical
// loss kernel handles (per-thread arrays).
const maxCategorical = 64

// kernelNames are the kernels the module must provide.
var kernelNames = []string{"im2col", "col2im", "add_bias", "act_fwd", "act_bwd", "fill", "gather_rows",
	"sumsq", "clip_scale", "adam", "log_softmax_rows", "col_sum", "ppo_loss", "a3c_loss", "dqn_loss"}

// loadKernels compiles kernelSource for this GPU with NVRTC, loads the
// PTX and looks the kernels up. Context current, OS thread locked.
func (d *Device) loadKernels() error {
	ptx, err := d.compile()
	if err != nil {
		return err
	}
	if r := d.l.cuModuleLoadData(&d.mod, &ptx[0]); r != cuSuccess {
		if r == cuErrUnsupportedPTX {
			return unavailable("the driver (CUDA %s) cannot load PTX from NVRTC %d.%d (cuModuleLoadData: CUDA_ERROR_UNSUPPORTED_PTX_VERSION): update the NVIDIA driver or use an older CUDA toolkit, or set num_gpus: 0",
				cudaVersion(d.l.driverVersion), d.l.nvrtcMajor, d.l.nvrtcMinr)
		}
		return d.l.checkCU("cuModuleLoadData", r)
	}
	for _, n := range kernelNames {
		var fn uintptr
		cn := cString(n)
		if err := d.l.checkCU("cuModuleGetFunction("+n+")", d.l.cuModuleGetFunction(&fn, d.mod, &cn[0])); err != nil {
			return err
		}
		d.fns[n] = fn
	}
	return nil
}

// compile runs NVRTC on kernelSource for the device's compute capability
// and returns the NUL-terminated PTX; a compile error carries NVRTC's log.
func (d *Device) compile() ([]byte, error) {
	l := d.l
	src, name := cString(kernelSource), cString("gray_kernels.cu")
	var prog uintptr
	if err := l.checkNVRTC("nvrtcCreateProgram", l.nvrtcCreateProgram(&prog, &src[0], &name[0], 0, 0, 0)); err != nil {
		return nil, err
	}
	defer l.nvrtcDestroyProgram(&prog)
	opts := [][]byte{cString(fmt.Sprintf("--gpu-architecture=compute_%d%d", d.cc[0], d.cc[1])), cString("--std=c++14")}
	ptrs := make([]*byte, len(opts))
	for i := range opts {
		ptrs[i] = &opts[i][0]
	}
	if r := l.nvrtcCompileProgram(prog, int32(len(ptrs)), unsafe.Pointer(&ptrs[0])); r != 0 {
		var n uint64
		log := ""
		if l.nvrtcGetProgramLogSz(prog, &n) == 0 && n > 1 {
			b := make([]byte, n)
			if l.nvrtcGetProgramLog(prog, &b[0]) == 0 {
				log = strings.TrimSpace(string(b[:n-1]))
			}
		}
		return nil, fmt.Errorf("compiling the CUDA kernels for compute %d.%d: %w: %s", d.cc[0], d.cc[1], l.checkNVRTC("nvrtcCompileProgram", r), strings.ReplaceAll(log, "\n", "; "))
	}
	var n uint64
	if err := l.checkNVRTC("nvrtcGetPTXSize", l.nvrtcGetPTXSize(prog, &n)); err != nil {
		return nil, err
	}
	ptx := make([]byte, n+1) // nvrtcGetPTXSize counts the NUL; one spare
	if err := l.checkNVRTC("nvrtcGetPTX", l.nvrtcGetPTX(prog, &ptx[0])); err != nil {
		return nil, err
	}
	return ptx, nil
}

// ptr is a device address passed to a kernel.
type ptr uintptr

// launch runs kernel name over n threads in blocks of 256 (grid
// ⌈n/256⌉; pass grid > 0 to fix it instead). Arguments are ptr,
// *Buffer, int (passed as a C int), int64 (long long) or float32.
// Device lock held.
func (d *Device) launch(name string, n int, grid int, args ...any) error {
	fn, ok := d.fns[name]
	if !ok {
		return fmt.Errorf("cuda: no kernel %q", name)
	}
	if len(args) > len(d.args.vals) {
		return fmt.Errorf("cuda: kernel %s with %d arguments", name, len(args))
	}
	for i, a := range args {
		var v uint64
		switch x := a.(type) {
		case ptr:
			v = uint64(x)
		case *Buffer:
			v = uint64(x.ptr)
		case int:
			if x > math.MaxInt32 || x < math.MinInt32 {
				return fmt.Errorf("cuda: kernel %s argument %d (%d) exceeds a C int", name, i, x)
			}
			v = uint64(uint32(int32(x)))
		case int64:
			v = uint64(x)
		case float32:
			v = uint64(math.Float32bits(x))
		default:
			return fmt.Errorf("cuda: kernel %s argument %d of type %T", name, i, a)
		}
		d.args.vals[i] = v
	}
	const block = 256
	if grid <= 0 {
		grid = (n + block - 1) / block
	}
	if n <= 0 || grid == 0 {
		return nil
	}
	if grid > math.MaxInt32 {
		return fmt.Errorf("cuda: kernel %s over %d values needs more blocks than a grid holds", name, n)
	}
	return d.l.checkCU("cuLaunchKernel("+name+")", d.l.cuLaunchKernel(fn, uint32(grid), 1, 1, block, 1, 1, 0, 0,
		unsafe.Pointer(&d.args.ptrs[0]), 0))
}
