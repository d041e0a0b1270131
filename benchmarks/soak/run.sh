#!/bin/sh
# The cluster soak (issue 27): TestChaos (runtime/driver) for SOAK_LENGTH
# (default 3m30s) with a node killed every SOAK_PERIOD (default 30s): a
# head and 3 nodes whose every CPU the workload holds, two drivers at
# once, the head's daemon killed and restarted once. Every result must be
# exact, and `gray status` must show the cluster in balance within
# SOAK_BALANCE (default 5s) of each kill. It fails when the run saw fewer
# kills than its length and period make (a soak that killed nothing
# proves nothing). Prints the load beside the figures, and keeps the
# whole log (its path is printed): each kill's line says what was out of
# balance after it, and from when to when.
#
#   benchmarks/soak/run.sh            # from anywhere in the module
#   SOAK_LENGTH=10m benchmarks/soak/run.sh
set -eu
cd "$(dirname "$0")/../.."
length=${SOAK_LENGTH:-3m30s}
period=${SOAK_PERIOD:-30s}
limit=${SOAK_BALANCE:-5}
log=$(mktemp "${TMPDIR:-/tmp}/gray-soak-XXXXXX.log")
echo "soak: log in $log"
echo "load before: $(cat /proc/loadavg)"
status=0
GRAY_CHAOS=$length GRAY_CHAOS_PERIOD=$period go test -count=1 -run '^TestChaos$' -v -timeout 30m ./runtime/driver/ >"$log" 2>&1 || status=$?
echo "load after: $(cat /proc/loadavg)"
grep -E 'kill [0-9]+:|head killed|chaos run:|workload drained|second driver|FAIL|panic|Error|error' "$log" || true
if [ $status -ne 0 ]; then
	echo "soak: the chaos run failed (exit $status); its log: $log"
	exit $status
fi
# The kills the run must have made: one per whole period in its length.
secs() { # a Go duration of h, m and s (3m30s, 90s, 1h) in seconds
	echo "$1" | awk '{ s = 0; v = $0
		while (match(v, /^[0-9.]+(h|ms|m|s)/)) {
			t = substr(v, 1, RLENGTH); v = substr(v, RLENGTH + 1)
			n = t + 0; u = t; sub(/^[0-9.]+/, "", u)
			s += (u == "h") ? n * 3600 : (u == "m") ? n * 60 : (u == "ms") ? n / 1000 : n
		}
		if (v != "") { print "bad"; exit } print s }'
}
len_s=$(secs "$length")
per_s=$(secs "$period")
if [ "$len_s" = bad ] || [ "$per_s" = bad ]; then
	echo "soak: SOAK_LENGTH=$length or SOAK_PERIOD=$period is not a duration like 3m30s or 30s"
	exit 2
fi
want=$(awk -v l="$len_s" -v p="$per_s" 'BEGIN { print int(l / p + 1e-9) }')
kills=$(grep -c 'gray status too .* later' "$log" || true)
if ! grep -q 'chaos run: ' "$log" || [ "$kills" -lt "$want" ] || [ "$kills" -eq 0 ]; then
	echo "soak: the run made $kills kills, want $want (did TestChaos run at all?); its log: $log"
	exit 1
fi
# "gray status too 1.234s later": each must be within the limit.
slow=$(sed -n 's/.*gray status too \([0-9.]*\)\(m\{0,1\}s\) later.*/\1 \2/p' "$log" |
	awk -v lim="$limit" '{ s = ($2 == "ms") ? $1 / 1000 : $1; if (s > lim) print s }')
if [ -n "$slow" ]; then
	echo "soak: gray status balanced later than ${limit}s after a kill: $slow (what was out of balance: in $log)"
	exit 1
fi
echo "soak: $kills kills, every one balanced within ${limit}s; results exact"
