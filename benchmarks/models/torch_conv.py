#!/usr/bin/python3
"""PyTorch peer for the Go ConvNet benchmarks in models/bench_test.go.

Builds the same networks (same layer sizes, the same TensorFlow-style "same"
padding, the same loss and optimiser) and times them on one thread:

  train-small  the ConvNetTrainStep42 network: 42x42x1 images, conv 16 3x3/2,
               conv 32 3x3/2 (ReLU), 64 ReLU units, 4 outputs; batch 32;
               forward, mean squared output, backward, Adam.
  train-default  the catalog's default for 42x42x1 images with PPO's model
               options: conv 16 4x4/2, 32 4x4/2, 256 11x11/1 valid (ReLU),
               then a policy head (64-64 tanh -> 6) and a value head
               (64-64 tanh -> 1) on the conv features; batch 32.
  act-default-N  forward of the default network without gradients on N
               observations (rollout batch sizes 1, 8, 32).
  train-default84, act-default84-N  the same for the catalog's default on
               84x84x4 images (four stacked frames): conv 16 8x8/4,
               32 4x4/2, 256 11x11/1 valid, then the same heads.

It prints one line per case and dtype: milliseconds per op of wall time, of
this thread's CPU time (time.thread_time) and of the whole process's CPU
time, each the best of --repeats runs (the machine is shared: the best run
is the least disturbed one). Go's benchmarks report wall time and the
benchmark thread's CPU time (ns/op and cpu-ns/op).

  make bench-deps                       # installs Debian's python3-torch
  /usr/bin/python3 benchmarks/models/torch_conv.py

Debian's torch links OpenBLAS; OPENBLAS_CORETYPE, when this machine sets it,
pins OpenBLAS to an older kernel. Unset it (and OPENBLAS_L2_SIZE) for this
command alone to time a current build, as benchmarks/results/models.md does.
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn


def same_pad(size, k, s):
    """TensorFlow's (and models.NewConvGeom's) "same" padding: before, after."""
    out = (size + s - 1) // s
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2, out


def conv_stack(h, w, c, filters):
    layers = []
    for out, k, s, valid in filters:
        if valid:
            h, w = (h - k) // s + 1, (w - k) // s + 1
        else:
            top, bottom, oh = same_pad(h, k, s)
            left, right, ow = same_pad(w, k, s)
            if top or bottom or left or right:
                layers.append(nn.ZeroPad2d((left, right, top, bottom)))
            h, w = oh, ow
        layers += [nn.Conv2d(c, out, k, s), nn.ReLU()]
        c = out
    return nn.Sequential(*layers, nn.Flatten()), h * w * c


def mlp(n_in, hiddens, n_out, act):
    layers = []
    for h in hiddens:
        layers += [nn.Linear(n_in, h), act()]
        n_in = h
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


class Net(nn.Module):
    def __init__(self, filters, hiddens, act, outputs, value, shape=(42, 42, 1)):
        super().__init__()
        self.conv, feat = conv_stack(*shape, filters)
        self.pi = mlp(feat, hiddens, outputs, act)
        self.vf = mlp(feat, hiddens, 1, act) if value else None

    def forward(self, x):  # x: [N, H, W, C], height-width-channel like Gray
        f = self.conv(x.permute(0, 3, 1, 2))
        return self.pi(f), (self.vf(f) if self.vf is not None else None)


SMALL = dict(filters=[(16, 3, 2, False), (32, 3, 2, False)], hiddens=[64], act=nn.ReLU, outputs=4, value=False)
DEFAULT = dict(filters=[(16, 4, 2, False), (32, 4, 2, False), (256, 11, 1, True)], hiddens=[64, 64], act=nn.Tanh,
               outputs=6, value=True)
DEFAULT84 = dict(DEFAULT, filters=[(16, 8, 4, False), (32, 4, 2, False), (256, 11, 1, True)], shape=(84, 84, 4))


def timeit(fn, iters, repeats):
    fn()
    fn()
    walls, cpus, procs = [], [], []
    for _ in range(repeats):
        w0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        for _ in range(iters):
            fn()
        walls.append((time.perf_counter() - w0) / iters * 1e3)
        cpus.append((time.thread_time() - c0) / iters * 1e3)
        procs.append((time.process_time() - p0) / iters * 1e3)
    return min(walls), min(cpus), min(procs)


def train_case(spec, dtype, batch=32):
    torch.manual_seed(1)
    net = Net(**spec).to(dtype)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.rand(batch, *spec.get("shape", (42, 42, 1)), dtype=dtype)

    def step():
        opt.zero_grad(set_to_none=False)
        out, v = net(x)
        loss = out.square().mean()
        if v is not None:
            loss = loss + v.square().mean()
        loss.backward()
        opt.step()
    return step


def act_case(spec, dtype, batch):
    torch.manual_seed(1)
    net = Net(**spec).to(dtype)
    x = torch.rand(batch, *spec.get("shape", (42, 42, 1)), dtype=dtype)

    def act():
        with torch.no_grad():
            net(x)
    return act


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, mkldnn {torch.backends.mkldnn.is_available()}")
    cases = [("train-small", lambda d: train_case(SMALL, d), 20),
             ("train-default", lambda d: train_case(DEFAULT, d), 10)]
    for n in (1, 8, 32):
        cases.append((f"act-default-{n}", lambda d, n=n: act_case(DEFAULT, d, n), max(10, 200 // n)))
    cases.append(("train-default84", lambda d: train_case(DEFAULT84, d), 5))
    for n in (1, 8, 32):
        cases.append((f"act-default84-{n}", lambda d, n=n: act_case(DEFAULT84, d, n), max(5, 100 // n)))
    if args.cases:
        keep = args.cases.split(",")
        cases = [c for c in cases if c[0] in keep]
    for dname in args.dtypes.split(","):
        dtype = getattr(torch, dname)
        for name, make, iters in cases:
            wall, cpu, proc = timeit(make(dtype), iters, args.repeats)
            print(f"{name:16s} {dname:8s} wall {wall:8.3f} ms/op   cpu {cpu:8.3f} ms/op   process cpu {proc:8.3f} ms/op")


if __name__ == "__main__":
    main()
