#!/bin/sh
# The cluster soak (issue 27): TestChaos for SOAK_LENGTH (default 3m30s)
# with a node killed every SOAK_PERIOD (default 30s): a head and 3 nodes
# whose every CPU the workload holds, two drivers at once, the head's
# daemon killed and restarted once. Every result must be exact, and
# `gray status` must show the cluster in balance within SOAK_BALANCE
# (default 5s) of each kill. Prints the load beside the figures.
#
#   benchmarks/soak/run.sh            # from the module root
#   SOAK_LENGTH=10m benchmarks/soak/run.sh
set -eu
cd "$(dirname "$0")/../.."
length=${SOAK_LENGTH:-3m30s}
period=${SOAK_PERIOD:-30s}
limit=${SOAK_BALANCE:-5}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "load before: $(cat /proc/loadavg)"
status=0
GRAY_CHAOS=$length GRAY_CHAOS_PERIOD=$period go test -count=1 -run '^TestChaos$' -v -timeout 30m . >"$log" 2>&1 || status=$?
echo "load after: $(cat /proc/loadavg)"
grep -E 'kill [0-9]+:|head killed|chaos run:|chaos: the driver took|second driver|drained|FAIL|Error|error' "$log" || true
if [ $status -ne 0 ]; then
	echo "soak: the chaos run failed (exit $status); its log:"
	cat "$log"
	exit $status
fi
# "gray status too 1.234s later": each must be within the limit.
slow=$(sed -n 's/.*gray status too \([0-9.]*\)\(m\{0,1\}s\) later.*/\1 \2/p' "$log" |
	awk -v lim="$limit" '{ s = ($2 == "ms") ? $1 / 1000 : $1; if (s > lim) print s }')
kills=$(grep -c 'gray status too' "$log" || true)
if [ -n "$slow" ]; then
	echo "soak: gray status balanced later than ${limit}s after a kill: $slow"
	exit 1
fi
echo "soak: $kills kills, every one balanced within ${limit}s; results exact"
