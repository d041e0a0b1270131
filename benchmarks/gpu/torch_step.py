"""One PPO minibatch step of the PixelPong network in PyTorch CUDA: the peer
of benchmarks/gpu/learnerstep (same network, loss, clipping and Adam; data
already on the GPU, minibatches gathered there). Prints
"torch-cuda batch=256 ms/step=0.123" per batch size."""
import sys
import time

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 16, 4, stride=4)
        self.fc = nn.Linear(16 * 10 * 10, 128)
        self.pi = nn.Linear(128, 7)
        self.vf = nn.Linear(128, 1)

    def forward(self, x):
        h = torch.relu(self.conv(x)).flatten(1)
        h = torch.relu(self.fc(h))
        return self.pi(h), self.vf(h).squeeze(1)


def time_step(mb, steps, dev):
    torch.manual_seed(1)
    net = Net().to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=5e-4)
    n = 8 * mb
    obs = torch.rand(n, 2, 40, 40, device=dev) - 0.5
    act = torch.randint(0, 7, (n,), device=dev)
    old_logp = torch.full((n,), -2.0, device=dev)
    adv = torch.randn(n, device=dev)
    vtarg = torch.randn(n, device=dev)

    def step(idx):
        logits, v = net(obs[idx])
        lp = torch.log_softmax(logits, 1)
        logp = lp.gather(1, act[idx].unsqueeze(1)).squeeze(1)
        ratio = torch.exp(logp - old_logp[idx])
        a = adv[idx]
        surr = torch.min(ratio * a, torch.clamp(ratio, 0.9, 1.1) * a).mean()
        ent = -(lp.exp() * lp).sum(1).mean()
        loss = -surr + 0.5 * ((v - vtarg[idx]) ** 2).mean() - 0.01 * ent
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 0.5)
        opt.step()

    def run(k):
        for e in range(max(1, k // 8)):
            perm = torch.randperm(n, device=dev)
            for j in range(8):
                step(perm[j * mb:(j + 1) * mb])
        torch.cuda.synchronize()

    run(max(8, steps // 10))
    k = max(1, steps // 8) * 8
    t = time.perf_counter()
    run(k)
    return (time.perf_counter() - t) * 1000 / k


def main():
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "256,2048").split(",")]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    dev = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
    for mb in sizes:
        print(f"torch-cuda batch={mb} ms/step={time_step(mb, steps, dev):.4f}", flush=True)


if __name__ == "__main__":
    main()
