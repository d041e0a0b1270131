package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKernelsEmulated compiles the kernel source as host C++ in double
// precision (a GPU thread per loop iteration) and checks, with no GPU,
// that the loss kernels' gradients are the derivatives of their losses
// (central finite differences: PPO with and without value clipping,
// A3C, DQN) and that col2im is im2col's adjoint. It needs g++; the
// comparison with the CPU path (TestPPOLossMatchesCPU and the others)
// needs a GPU.
func TestKernelsEmulated(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ to compile the kernels for the host: ", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "kernels.cpp")
	if err := os.WriteFile(src, []byte(emulationPrelude+kernelSource+emulationHarness), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kernels")
	if out, err := exec.Command(gxx, "-std=c++14", "-O1", "-w", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || strings.Contains(string(out), "FAIL") {
		t.Fatalf("emulated kernels: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}

// emulationPrelude maps CUDA's built-ins onto the host, in double.
const emulationPrelude = `
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#define float double
#define expf exp
#define logf log
#define fmaxf fmax
#define fminf fmin
#define tanhf tanh
#define sqrtf sqrt
#define fabsf fabs
struct dim3_ { long long x,y,z; };
static dim3_ blockIdx, blockDim, threadIdx, gridDim;
#define __global__
#define __device__
#define __shared__ static
static void __syncthreads() {}
static double atomicAdd(double* p, double v) { double o=*p; *p+=v; return o; }
static double __int_as_float(int i) { return NAN; }

#define ACT_RELU 1
#define ACT_TANH 2
#define IDX (blockIdx.x * (long long)blockDim.x + threadIdx.x)

`

// emulationHarness runs the kernels on random inputs and prints FAIL
// lines for every mismatch.
const emulationHarness = `
#define N 7
#define A 5
static double rnd() { return 2.0 * rand() / RAND_MAX - 1.0; }
#define LAUNCH(n, call) do { blockDim.x = 1; for (long long _i = 0; _i < (n); _i++) { blockIdx.x = _i; threadIdx.x = 0; call; } } while (0)
double logits[N*A], value[N], act[N], oldlogp[N], adv[N], vtarg[N], vpred[N], oldl[N*A], ret[N], tgt[N], wt[N];
double dl[N*A], dv[N], st[N*5], td[N];
double ppo_total(double vfclip) {
  double dl2[N*A], dv2[N], st2[N*5];
  LAUNCH(N, ppo_loss(logits, value, act, oldlogp, adv, vtarg, vpred, oldl, N, A, 0.2, vfclip, 0.7, 0.3, 0.01, 1.0/N, dl2, dv2, st2));
  double s = 0; for (int r = 0; r < N; r++) s += st2[r*5+4] / N; return s;
}
double a3c_total() {
  double dl2[N*A], dv2[N], st2[N*4];
  LAUNCH(N, a3c_loss(logits, value, act, adv, ret, N, A, 0.5, 0.01, 1.0, dl2, dv2, st2));
  double s = 0; for (int r = 0; r < N; r++) s += st2[r*4+3]; return s;
}
double dqn_total() {
  double dq[N*A], td2[N], st2[N];
  LAUNCH(N, dqn_loss(logits, act, tgt, wt, N, A, 1.0, 1.0/N, dq, td2, st2));
  double s = 0; for (int r = 0; r < N; r++) s += st2[r] / N; return s;
}
double maxerr = 0;
void check(const char* what, double (*f)(), double* x, double* g, int n) {
  for (int i = 0; i < n; i++) {
    double h = 1e-6, o = x[i];
    x[i] = o + h; double p = f(); x[i] = o - h; double m = f(); x[i] = o;
    double fd = (p - m) / (2*h);
    double e = fabs(fd - g[i]);
    if (e > maxerr) maxerr = e;
    if (e > 1e-6) printf("FAIL %s[%d]: analytic %.9g finite difference %.9g\n", what, i, g[i], fd);
  }
}
double vfc_cur;
double ppo_f() { return ppo_total(vfc_cur); }
int main() {
  srand(3);
  for (int i = 0; i < N*A; i++) { logits[i] = 2*rnd(); oldl[i] = 2*rnd(); }
  for (int r = 0; r < N; r++) { act[r] = rand() % A; oldlogp[r] = -1.6 + 0.8*rnd(); adv[r] = rnd(); vtarg[r] = rnd(); vpred[r] = rnd(); value[r] = rnd(); ret[r] = rnd(); tgt[r] = 3*rnd(); wt[r] = 0.5 + 0.5*(rnd()+1); }
  double vcs[2] = {0, 0.3};
  for (int k = 0; k < 2; k++) {
    vfc_cur = vcs[k];
    LAUNCH(N, ppo_loss(logits, value, act, oldlogp, adv, vtarg, vpred, oldl, N, A, 0.2, vfc_cur, 0.7, 0.3, 0.01, 1.0/N, dl, dv, st));
    check("ppo dlogits", ppo_f, logits, dl, N*A);
    check("ppo dvalue", ppo_f, value, dv, N);
  }
  LAUNCH(N, a3c_loss(logits, value, act, adv, ret, N, A, 0.5, 0.01, 1.0, dl, dv, st));
  check("a3c dlogits", a3c_total, logits, dl, N*A);
  check("a3c dvalue", a3c_total, value, dv, N);
  LAUNCH(N, dqn_loss(logits, act, tgt, wt, N, A, 1.0, 1.0/N, dl, td, st));
  check("dqn dq", dqn_total, logits, dl, N*A);
  {
    const int B=2,H=5,W=4,C=3,KH=3,KW=2,S=2,PT=1,PL=0,OH=3,OW=2; long long tot=(long long)B*OH*OW*KH*KW*C;
    static double x[B*H*W*C], cols[B*OH*OW*KH*KW*C], cc[B*OH*OW*KH*KW*C], dx[B*H*W*C];
    for (int i=0;i<B*H*W*C;i++) x[i]=rnd();
    for (long long i=0;i<tot;i++) cc[i]=rnd();
    LAUNCH(tot, im2col(x, cols, tot, H,W,C,KH,KW,S,PT,PL,OH,OW));
    LAUNCH(tot, col2im(cc, dx, tot, H,W,C,KH,KW,S,PT,PL,OH,OW));
    double a=0,b=0; for (long long i=0;i<tot;i++) a+=cols[i]*cc[i]; for (int i=0;i<B*H*W*C;i++) b+=x[i]*dx[i];
    if (fabs(a-b) > 1e-9) printf("FAIL im2col/col2im are not adjoint: %.12g vs %.12g\n", a, b);
    // patch (b=1, oh=2, ow=1), kernel (kh=0, kw=1, c=2): y = 2*2-1+0 = 3, x = 1*2-0+1 = 3
    long long row = (1*OH+2)*OW+1, col = (0*KW+1)*C+2;
    if (cols[row*KH*KW*C+col] != x[((1*H+3)*W+3)*C+2]) printf("FAIL im2col value %.9g, image value %.9g\n", cols[row*KH*KW*C+col], x[((1*H+3)*W+3)*C+2]);
  }
  printf("max |analytic - finite difference| = %.3g\n", maxerr);
  return 0;
}
`
