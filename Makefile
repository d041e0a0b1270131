# Gray's build. `make train` trains PPO on CartPole-v1 until solved;
# `make test` installs what the suite needs (when missing) and runs it.
GO      ?= go
BIN     := bin
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# protobuf-compiler and python3-grpc-tools are for `make proto` only;
# dataset-fashion-mnist is the data of the supervised-learning examples;
# chromium runs the dashboard's browser tests; redis-server is a cluster's control
# store (gray start --head, the cluster tests); g++ compiles models/cuda's
# kernels for the host, to check them without a GPU (TestKernelsEmulated).
APT_PKGS := chromium protobuf-compiler python3-grpc-tools python3-grpcio dataset-fashion-mnist redis-server g++

.PHONY: all build train test vet lint deps proto bench bench-deps bench-conv clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

train: build
	$(BIN)/train -f configs/cartpole-ppo.yaml

## deps installs the system packages the test suite uses, when missing.
deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

vet:
	$(GO) vet ./...
	@fmt=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$fmt" ]; then echo "gofmt needed:"; echo "$$fmt"; exit 1; fi

# The race detector makes learning runs several times slower, so a few
# learning tests (and the dashboard's browser tests) skip themselves under
# -race; the second pass runs them.
test: deps vet
	$(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -count=1 -timeout 20m ./rllib/... ./tune/... ./examples/... ./platform/dashboard/...

## proto regenerates plugins/proto and the Python stubs (installing protoc,
## grpc_tools and the Go generators when missing).
proto: deps
	$(MAKE) -C plugins proto GO=$(GO)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./benchmarks/...

## bench-deps installs the peers some benchmarks compare with (Debian's
## python3-torch for benchmarks/models); the test suite does not need them.
BENCH_APT_PKGS := python3-torch
bench-deps:
	@missing=""; for p in $(BENCH_APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

## bench-conv times the ConvNet benchmarks and their PyTorch peer (one
## thread each, OpenBLAS unpinned for the peer) in the same session, in
## turns: BENCH_ROUNDS rounds of Go, then PyTorch with glibc's default
## allocator settings, then PyTorch with freed memory kept (its big
## per-call buffers otherwise come back as fresh pages, which under load
## cost it up to 10x); take each side's best.
BENCH_ROUNDS ?= 3
TORCH_ENV := env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
bench-conv: bench-deps
	$(GO) test -c -o $(BIN)/models.test ./models/
	for i in $$(seq $(BENCH_ROUNDS)); do \
		echo "== round $$i: Gray"; \
		$(BIN)/models.test -test.run '^$$' -test.bench 'ConvNet' -test.benchtime 30x || exit 1; \
		echo "== round $$i: PyTorch"; \
		$(TORCH_ENV) /usr/bin/python3 benchmarks/models/torch_conv.py --repeats 2 || exit 1; \
		echo "== round $$i: PyTorch, freed memory kept"; \
		$(TORCH_ENV) MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
			/usr/bin/python3 benchmarks/models/torch_conv.py --repeats 2 || exit 1; \
	done

clean:
	rm -rf $(BIN)

## lint runs staticcheck (installed on first use).
lint:
	@command -v staticcheck >/dev/null || $(GO) install honnef.co/go/tools/cmd/staticcheck@latest
	staticcheck ./...
