#!/usr/bin/env bash
# Builds what benchmarks/gpu/run.sh needs with CGO_ENABLED=0 (CUDA is
# loaded at run time, so no CUDA or C compiler here) and packs it:
#
#   benchmarks/gpu/pack.sh [DIR]     # default DIR: ./gpu-bin
#
# DIR/bin holds cuda.test, ppo.test, learnerstep and train; DIR/gray-gpu.tar.xz
# holds bin/ and benchmarks/gpu/ (run.sh, torch_step.py, the PixelPong
# config), under 64 MiB. On the GPU host: tar xJf gray-gpu.tar.xz &&
# benchmarks/gpu/run.sh bin
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mkdir -p "${1:-gpu-bin}" && cd "${1:-gpu-bin}" && pwd)
cd "$root"
mkdir -p "$dir/bin"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
go test -c -trimpath -ldflags=-s -o "$dir/bin/cuda.test" ./models/cuda
go test -c -trimpath -ldflags=-s -o "$dir/bin/ppo.test" ./rllib/ppo
go build -trimpath -ldflags=-s -o "$dir/bin/learnerstep" ./benchmarks/gpu/learnerstep
go build -trimpath -ldflags=-s -o "$dir/bin/train" ./cmd/train
tar cJf "$dir/gray-gpu.tar.xz" -C "$dir" bin -C "$root" benchmarks/gpu/run.sh benchmarks/gpu/torch_step.py benchmarks/gpu/pixelpong-ppo-gpu.yaml
size=$(stat -c %s "$dir/gray-gpu.tar.xz")
if [ "$size" -ge $((64 << 20)) ]; then
	echo "pack.sh: $dir/gray-gpu.tar.xz is $size bytes, over 64 MiB" >&2
	exit 1
fi
echo "$dir/gray-gpu.tar.xz: $size bytes"
