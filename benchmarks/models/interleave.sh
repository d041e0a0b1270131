#!/bin/sh
# Times Gray's ConvNet benchmarks and their PyTorch peer in turns, one
# thread each, ROUNDS rounds (default 3): each round runs the Go benchmarks
# (30 iterations per case), then torch_conv.py with freed memory kept
# (see the Makefile's bench-conv). Compare each side's best cpu-ns/op
# (Go) and "cpu" ms/op (PyTorch) across the rounds: both are CPU time of
# the thread doing the work, which a loaded machine disturbs less than
# wall time.
#
#   benchmarks/models/interleave.sh [ROUNDS] [GO_BENCH_REGEXP] [TORCH_CASES] [TORCH_DTYPES]
set -eu
rounds=${1:-3}
bench=${2:-ConvNet}
cases=${3:-}
dtypes=${4:-float32,float64}
bin=${TMPDIR:-/tmp}/gray-models.test
go test -c -o "$bin" ./models/
for i in $(seq "$rounds"); do
	echo "== round $i: Gray"
	(cd models && "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime 30x)
	echo "== round $i: PyTorch"
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
		MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
		/usr/bin/python3 benchmarks/models/torch_conv.py --repeats 2 --dtypes "$dtypes" ${cases:+--cases "$cases"}
done
