#!/usr/bin/python3
"""PyTorch peer for BenchmarkLearnerStep in rllib/ppo/bench_test.go.

Times one PPO minibatch step (forward, loss, backward, gradient-norm clip,
Adam) on the networks Gray's benchmark uses, at several intra-op thread
counts (torch.set_num_threads):

  PixelPong  2x40x40 frame differences, conv 16 4x4 stride 4 (ReLU), dense
             128 ReLU, 6 action logits and 1 value from the shared layer
             (vf_share_layers); 256 rows.
  CartPole   4 inputs, a 64-64 tanh policy net (2 logits) and a separate
             64-64 tanh value net; 128 rows.

The loss is Gray's PPO loss: clipped surrogate, KL penalty to the sampling
distribution, value loss, entropy bonus. One line per case and thread
count: milliseconds per step, the best of --repeats runs (the machine may
be shared: the best run is the least disturbed one).

  make bench-deps       # Debian's python3-torch
  /usr/bin/python3 benchmarks/models/torch_ppo_step.py --threads 1,2
"""
import argparse
import time

import torch
import torch.nn as nn


class PixelPong(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(2, 16, 4, 4), nn.ReLU(), nn.Flatten())
        self.fc = nn.Sequential(nn.Linear(16 * 10 * 10, 128), nn.ReLU())
        self.pi = nn.Linear(128, 6)
        self.vf = nn.Linear(128, 1)

    def forward(self, x):
        h = self.fc(self.conv(x))
        return self.pi(h), self.vf(h).squeeze(1)


class CartPole(nn.Module):
    def __init__(self):
        super().__init__()
        self.pi = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
        self.vf = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))

    def forward(self, x):
        return self.pi(x), self.vf(x).squeeze(1)


def ppo_step(net, opt, obs, act, old_logits, old_logp, adv, vtarg):
    logits, value = net(obs)
    logp_all = torch.log_softmax(logits, dim=1)
    logp = logp_all.gather(1, act.unsqueeze(1)).squeeze(1)
    ratio = torch.exp(logp - old_logp)
    surr = torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv)
    old_logp_all = torch.log_softmax(old_logits, dim=1)
    kl = (old_logp_all.exp() * (old_logp_all - logp_all)).sum(1).mean()
    entropy = -(logp_all.exp() * logp_all).sum(1).mean()
    vf = ((value - vtarg) ** 2).mean()
    loss = -surr.mean() + 0.2 * kl + 0.5 * vf - 0.01 * entropy
    opt.zero_grad(set_to_none=False)
    loss.backward()
    nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    opt.step()


def case(name, threads, repeats, iters):
    torch.manual_seed(1)
    if name == "PixelPong":
        net, rows, obs = PixelPong(), 256, torch.randn(256, 2, 40, 40)
        actions = 6
    else:
        net, rows, obs = CartPole(), 128, torch.randn(128, 4)
        actions = 2
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    act = torch.randint(0, actions, (rows,))
    old_logits = torch.randn(rows, actions)
    old_logp = torch.log_softmax(old_logits, 1).gather(1, act.unsqueeze(1)).squeeze(1)
    adv, vtarg = torch.randn(rows), torch.randn(rows)
    torch.set_num_threads(threads)
    for _ in range(3):
        ppo_step(net, opt, obs, act, old_logits, old_logp, adv, vtarg)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            ppo_step(net, opt, obs, act, old_logits, old_logp, adv, vtarg)
        best = min(best, (time.perf_counter() - t0) / iters * 1e3)
    print(f"torch {name}/threads={threads}: {best:.3f} ms/step (best of {repeats} x {iters})", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,2,4,8,16", help="comma-separated thread counts")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--cases", default="PixelPong,CartPole")
    args = p.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_interop_threads()} inter-op threads", flush=True)
    for name in args.cases.split(","):
        for t in (int(x) for x in args.threads.split(",")):
            case(name, t, args.repeats, args.iters)


if __name__ == "__main__":
    main()
