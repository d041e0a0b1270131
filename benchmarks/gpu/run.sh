#!/usr/bin/env bash
# Runs the GPU checks and figures in one go on a GPU host, from binaries
# built elsewhere by benchmarks/gpu/pack.sh (no Go needed here):
#
#   benchmarks/gpu/run.sh BIN_DIR
#
# 1. the checks: every models/cuda op's value and gradient against the CPU
#    path (cuda.test), and PPO's learner actor on the GPU (ppo.test);
# 2. the PPO minibatch step of the PixelPong network, Gray (learnerstep)
#    beside PyTorch CUDA (torch_step.py) in the same run;
# 3. PixelPong PPO, 14 rollout workers and num_gpus: 1, until the mean
#    return passes 0, with its wall time.
#
# Everything it prints also goes to $OUT (default ./gpu-out): checks.log,
# step.log, pixelpong.log and summary.txt. Each part's failure is reported
# and the next part still runs; the exit status is that of the checks.
# Environment: PYTHON (default /opt/torch/.venv/bin/python3), STEPS (timed
# minibatch steps per size, default 400), PONG_LIMIT (seconds, default 420).
set -u
bin=$(cd "${1:?usage: run.sh BIN_DIR (from pack.sh)}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
py=${PYTHON:-/opt/torch/.venv/bin/python3}
steps=${STEPS:-400}
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

note "== host: $(hostname) $(nproc) CPUs, $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$summary"
uptime | sed 's/^/load:/' | tee -a "$summary"

note "== 1. checks"
checks=0
(cd "$out" && "$bin/cuda.test" -test.v -test.count=1 2>&1) | tee "$out/checks.log"
checks=${PIPESTATUS[0]}
(cd "$out" && "$bin/ppo.test" -test.v -test.count=1 -test.run 'TestNumGPUs' -test.timeout 300s 2>&1) | tee -a "$out/checks.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || checks=1
grep -E '^(--- |ok|FAIL|PASS)' "$out/checks.log" | tee -a "$summary"
note "checks exit status: $checks"

note "== 2. learner step (PixelPong network, PPO minibatch, Adam)"
"$bin/learnerstep" -batch 256,2048 -steps "$steps" 2>&1 | tee "$out/step.log" | tee -a "$summary"
"$py" "$here/torch_step.py" 256,2048 "$steps" 2>&1 | tee -a "$out/step.log" | tee -a "$summary"

note "== 3. PixelPong PPO, 14 workers, num_gpus: 1, until mean return > 0"
start=$(date +%s.%N)
timeout "${PONG_LIMIT:-420}" "$bin/train" -f "$here/pixelpong-ppo-gpu.yaml" --local-dir "$out/results" >"$out/pixelpong.log" 2>&1
rc=$?
wall=$(echo "$(date +%s.%N) - $start" | bc)
tail -n 15 "$out/pixelpong.log" | tee -a "$summary"
note "pixelpong: exit status $rc (124: stopped at PONG_LIMIT), wall ${wall}s"
exit "$checks"
