#!/usr/bin/env bash
# Learner and rollout scaling on this host, from prebuilt binaries (issue 23):
#
#   1. PixelPong-v0 PPO (configs/pixelpong-ppo.yaml) for ITERS iterations of
#      2,048 steps at num_workers 0, 4 and 14 (WORKERS): steps/s, frames/s
#      (4 frames a step, PixelPong's default frame skip), the ratio to
#      num_workers 0, and the mean driver share and learner threads the
#      iterations report (driver_share, learner_threads in result.json).
#   2. BenchmarkLearnerStep (rllib/ppo): one PPO minibatch step of the
#      PixelPong network (256 rows) and of CartPole's (128 rows) at 1, 2, 4,
#      8 and 16 learner threads (THREADS), then the PyTorch peer
#      (benchmarks/models/torch_ppo_step.py) at the same thread counts, in
#      the same run. Each row gives wall ms/step, CPU ms/step and
#      path-ms/step (the step's critical path in CPU time: with wall time,
#      it tells the cost of the team's hand-offs from the work itself).
#
# Build once (anywhere with Go), copy bin/ with the repository's configs:
#
#   make build && go test -c -o bin/ppo.test ./rllib/ppo
#   make bench-deps     # Debian's python3-torch, for the peer
#   benchmarks/scaling/learner.sh [BIN]       # BIN defaults to bin
#
# Environment: WORKERS ("0 4 14"), ITERS (10), THREADS (1,2,4,8,16),
# BENCHTIME (40x), PYTHON (/usr/bin/python3), SKIP_TABLE=1 or SKIP_STEP=1 to run one part only.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(cd "${1:-bin}" 2>/dev/null && pwd) || { echo "learner.sh: no folder ${1:-bin}: build the binaries first (see the top of this script)" >&2; exit 2; }
WORKERS=${WORKERS:-"0 4 14"}
ITERS=${ITERS:-10}
THREADS=${THREADS:-1,2,4,8,16}
BENCHTIME=${BENCHTIME:-40x}
# Debian's python3, where make bench-deps installs torch.
PYTHON=${PYTHON:-/usr/bin/python3}
for f in "$BIN/train" "$BIN/ppo.test"; do
	[ -x "$f" ] || { echo "learner.sh: $f is missing: build it first (see the top of this script)" >&2; exit 2; }
done
out=$(mktemp -d "${TMPDIR:-/tmp}/gray-learner-XXXXXX")
echo "host $(hostname): $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); results in $out"

if [ "${SKIP_TABLE:-}" != 1 ]; then
	echo
	echo "## PixelPong-v0 PPO, $ITERS iterations of 2,048 steps"
	echo "| num_workers | steps/s | frames/s | × num_workers 0 | driver share | learner threads |"
	echo "|---|---|---|---|---|---|"
	base=""
	for w in $WORKERS; do
		"$BIN/train" -f configs/pixelpong-ppo.yaml --local-dir "$out/w$w" \
			--config "{\"num_workers\": $w}" --stop "{\"training_iteration\": $ITERS}" >"$out/w$w.log" 2>&1 ||
			{ echo "num_workers $w failed: see $out/w$w.log" >&2; exit 1; }
		result=$(find "$out/w$w" -name result.json | head -1)
		row=$("$PYTHON" - "$result" "$w" "${base:-0}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
last = rows[-1]
sps = last["timesteps_total"] / last["time_total_s"]
share = [r["driver_share"] for r in rows if "driver_share" in r]
threads = [r["learner_threads"] for r in rows if "learner_threads" in r]
base = float(sys.argv[3]) or sps
print(f"{sps:.0f} | {sps * 4:.0f} | {sps / base:.2f} | "
      f"{(sum(share) / len(share)) if share else float('nan'):.3f} | {threads[-1] if threads else '?'}")
PY
)
		[ -n "$base" ] || base=$(echo "$row" | cut -d'|' -f1)
		echo "| $w | $row |"
	done
fi

if [ "${SKIP_STEP:-}" != 1 ]; then
	echo
	echo "## Learner step (BenchmarkLearnerStep), threads $THREADS"
	pattern="LearnerStep/(PixelPong|CartPole)/threads=($(echo "$THREADS" | tr , '|'))\$"
	(cd rllib/ppo && "$BIN/ppo.test" -test.run '^$' -test.bench "$pattern" -test.benchtime "$BENCHTIME") |
		grep '^Benchmark' | tee "$out/go.txt"
	if "$PYTHON" -c 'import torch' 2>/dev/null; then
		env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$PYTHON" benchmarks/models/torch_ppo_step.py --threads "$THREADS" |
			tee "$out/torch.txt"
	else
		echo "PyTorch peer skipped: python3-torch is not installed (make bench-deps)"
	fi
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
