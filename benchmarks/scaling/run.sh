#!/usr/bin/env bash
# The scaling figures of a big host in one table (issue 22): the async rows
# of `gray microbenchmark --scaling` at 1, 2, 4, ... CPUs up to all of them
# (rate, ratio to linear, CPU time per call), the actor rows again without
# direct actor calls (GRAY_DIRECT_CALLS=0), the task rows again without
# leases for nested tasks (GRAY_LEASES=0), actor creation beside process
# starts, 1,000,000 queued tasks, and PixelPong PPO with 0, 4 and 14 rollout
# workers. It builds nothing: give it a folder holding prebuilt `gray` and
# `train` (go build -o DIR/ ./cmd/gray ./cmd/train on any machine of the
# same OS and architecture).
#
#   benchmarks/scaling/run.sh BIN_DIR [PONG_ITERATIONS]
#
# PONG_ITERATIONS (default 5) is how many PPO iterations each PixelPong run
# trains; its figure is environment steps per second over them. The table
# goes to stdout (markdown), progress to stderr. Note `uptime` beside it.
#
# Environment, for a quick try of the script itself (the defaults are the
# figures' settings): TRIALS (3) and DURATION (1s) of each microbenchmark
# row, CPUS (1, 2, 4, ... up to all: a comma-separated list) for the scaling
# rows and actor creation, QUEUED (1000000) tasks for the queueing probe.
# For example: TRIALS=1 DURATION=200ms CPUS=1,2 QUEUED=10000 run.sh BIN 1
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: run.sh BIN_DIR [PONG_ITERATIONS]: BIN_DIR holds prebuilt gray and train (go build -o BIN_DIR/ ./cmd/gray ./cmd/train)" >&2; exit 2; }
bin=$1
iters=${2:-5}
trials=${TRIALS:-3}
duration=${DURATION:-1s}
queued=${QUEUED:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
configs=$here/../../configs
for exe in gray train; do
	[[ -x $bin/$exe ]] || { echo "run.sh: $bin/$exe is missing: build it with go build -o $bin/ ./cmd/$exe" >&2; exit 2; }
done
cpus=$(nproc)
# counts: the CPU counts of the scaling rows and actor creation.
if [[ -n ${CPUS:-} ]]; then
	IFS=, read -r -a counts <<<"$CPUS"
else
	counts=()
	for ((n = 1; n < cpus; n *= 2)); do counts+=("$n"); done
	counts+=("$cpus")
fi
scaling=(microbenchmark --scaling --scaling-cpus "$(IFS=,; echo "${counts[*]}")" --trials "$trials" --duration "$duration")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rows=()
row() { rows+=("| $1 | $2 | $3 |"); }

echo "run.sh: load before: $(uptime)" >&2

# 1. Scaling rows: the printed table, one markdown row per line.
echo "run.sh: gray microbenchmark --scaling" >&2
"$bin/gray" "${scaling[@]}" >"$work/scaling.txt"
header=$(head -1 "$work/scaling.txt" | sed -E 's/^row \([^)]*\) *//; s/  +/ · /g')
row "scaling" "row (columns: $header)" ""
# scalingRows SECTION: the rows of a --scaling table on stdin, in markdown.
scalingRows() {
	while IFS= read -r line; do
		name=$(cut -c1-48 <<<"$line" | sed -E 's/^ +//; s/ +$//')
		cells=$(cut -c49- <<<"$line" | sed -E 's/^ +//; s/ {2,}/ · /g')
		echo "| $1 | $name | $cells |"
	done
}
tail -n +2 "$work/scaling.txt" | scalingRows "scaling" >"$work/scaling.md"
while IFS= read -r l; do rows+=("$l"); done <"$work/scaling.md"

# 1b. The actor rows again without actors calling actors directly
# (GRAY_DIRECT_CALLS=0; on by default: docs/scaling.md).
echo "run.sh: gray microbenchmark --scaling, without direct actor calls" >&2
GRAY_DIRECT_CALLS=0 "$bin/gray" "${scaling[@]}" >"$work/direct.txt"
tail -n +2 "$work/direct.txt" | grep "actor calls" | scalingRows "scaling, without direct calls" >"$work/direct.md"
while IFS= read -r l; do rows+=("$l"); done <"$work/direct.md"

# 1c. The task rows again without leases for nested tasks (GRAY_LEASES=0;
# on by default: docs/scaling.md); the process-client row is the one they serve.
echo "run.sh: gray microbenchmark --scaling, without leases" >&2
GRAY_LEASES=0 "$bin/gray" "${scaling[@]}" >"$work/leases.txt"
tail -n +2 "$work/leases.txt" | grep -A1 --no-group-separator "tasks async" | scalingRows "scaling, without leases" >"$work/leases.md"
while IFS= read -r l; do rows+=("$l"); done <"$work/leases.md"

# 2. Actor creation beside process starts, at every CPU count of the scaling rows.
for n in "${counts[@]}"; do
	echo "run.sh: actor creation at --cpus $n" >&2
	ratio=$("$bin/gray" microbenchmark --cpus "$n" --trials "$trials" --duration "$duration" \
		--filter "actor creation (each answers one call) / process starts" | awk '{print $(NF-5)}')
	row "actor creation / process starts" "--cpus $n" "${ratio}×"
done

# 3. One million queued tasks (QUEUED), at 2 CPUs and at all (once where they are the same).
for n in $(printf '%s\n' 2 "$cpus" | sort -nu); do
	echo "run.sh: $queued queued tasks at --cpus $n" >&2
	"$bin/gray" microbenchmark --cpus "$n" --queued "$queued" >"$work/queued.txt"
	row "$queued queued tasks" "--cpus $n: seconds to queue" "$(awk '/^queue /{print $(NF-3)}' "$work/queued.txt") s"
	row "$queued queued tasks" "--cpus $n: driver CPU while queueing" "$(awk '/driver CPU time while queueing/{print $(NF-1)}' "$work/queued.txt") s"
	row "$queued queued tasks" "--cpus $n: driver heap per task" "$(awk '/driver heap per queued task/{print $(NF-1)}' "$work/queued.txt") bytes"
	row "$queued queued tasks" "--cpus $n: then all run" "$(awk '/then all run/{print $(NF-1)}' "$work/queued.txt") s"
done

# 4. PixelPong PPO: environment steps per second with 0, 4 and 14 rollout workers.
for w in 0 4 14; do
	if [[ $w -ge $cpus ]]; then
		row "PixelPong PPO ($iters iterations)" "$w rollout workers" "skipped: needs more than $cpus CPUs"
		continue
	fi
	echo "run.sh: PixelPong PPO, $w rollout workers" >&2
	dir=$work/pong-$w
	"$bin/train" -f "$configs/pixelpong-ppo.yaml" --local-dir "$dir" --config "{\"num_workers\": $w}" \
		--stop "{\"training_iteration\": $iters}" >"$work/pong-$w.log" 2>&1
	last=$(find "$dir" -name result.json -exec tail -n 1 {} \; | head -1)
	steps=$(grep -o '"timesteps_total": *[0-9.e+]*' <<<"$last" | grep -o '[0-9.e+]*$')
	secs=$(grep -o '"time_total_s": *[0-9.e+-]*' <<<"$last" | grep -o '[0-9.e+-]*$')
	row "PixelPong PPO ($iters iterations)" "$w rollout workers: steps/s" "$(awk -v a="$steps" -v b="$secs" 'BEGIN{printf "%.0f (%d steps in %.1f s)", a/b, a, b}')"
done

echo "run.sh: load after: $(uptime)" >&2
echo "| section | row | figure |"
echo "| --- | --- | --- |"
printf '%s\n' "${rows[@]}"
