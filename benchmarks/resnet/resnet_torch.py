"""PyTorch peer of benchmarks/resnet: one training step (forward, backward,
momentum-SGD update) of the ResNet of examples/resnet on one thread.

    apt-get install -y python3-torch
    /usr/bin/python3 benchmarks/resnet/resnet_torch.py --steps 20

The network matches models.ResNet with widths 8, 16, 32 and one block per
stage: a 3x3 convolution without bias, batch norm and ReLU; three basic
residual blocks (the second and third halve the image and project the
shortcut with a 1x1 convolution and batch norm); global average pooling;
a dense layer to 10 classes. It runs in float64 (what Gray's models
compute in) and float32 (PyTorch's default).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.b1(self.c1(x)))
        h = self.b2(self.c2(h))
        return F.relu(h + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self, widths=(8, 16, 32), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        blocks, cin = [], widths[0]
        for s, w in enumerate(widths):
            blocks.append(Block(cin, w, 1 if s == 0 else 2))
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        h = self.blocks(self.stem(x))
        return self.fc(h.mean(dim=(2, 3)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    print(f"torch {torch.__version__}, 1 thread")
    for dtype in (torch.float64, torch.float32):
        for batch in (32, 64):
            net = ResNet().to(dtype)
            opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
            x = torch.rand(batch, 1, 28, 28, dtype=dtype)
            y = torch.randint(0, 10, (batch,))

            def step():
                opt.zero_grad()
                loss = F.cross_entropy(net(x), y)
                loss.backward()
                opt.step()

            step()
            t0 = time.perf_counter()
            for _ in range(args.steps):
                step()
            dt = (time.perf_counter() - t0) / args.steps
            params = sum(p.numel() for p in net.parameters())
            print(f"{str(dtype):14s} batch={batch:3d} params={params}  {dt * 1000:8.2f} ms/step  {batch / dt:8.1f} images/s")


if __name__ == "__main__":
    main()
