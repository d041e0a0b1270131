#!/bin/sh
# Node death at full use (issue 27), as an operator meets it: a head and 2
# nodes of 2 CPUs each on loopback, `train --env CartPole-v1 --alg PPO`
# with 5 rollout workers (every CPU the driver can lease), and after
# ITERS_BEFORE (default 20) iterations the process group of a non-head
# node that holds workers is killed with SIGKILL. It prints when the
# death was detected (`gray status`: read_at of the first read that shows
# the node dead), and when the run's next iteration ended or train said
# what it waits for ("waiting for ...": the nodes left cannot hold every
# worker); in that case a replacement node joins, and it prints when the
# next iteration ended. Goal: the run resumes within 5 s of the
# detection, or says what it waits for. Needs python3 (reading JSON) and
# redis-server.
#
#   benchmarks/soak/nodedeath.sh
set -eu
cd "$(dirname "$0")/../.."
before=${ITERS_BEFORE:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/gray-nodedeath-XXXXXX")
echo "nodedeath: work dir $work"
go build -o "$work/gray" ./cmd/gray
go build -o "$work/train" ./cmd/train
export GRAY_SESSION_DIR="$work/sessions" GRAY_LOCAL_DIR="$work/results"
gray="$work/gray"
cleanup() {
	[ -n "${trainpid:-}" ] && kill "$trainpid" 2>/dev/null || true
	"$gray" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$gray" start --head --port 0 --num-cpus 2 --temp-dir "$work/n0" --node-ip-address 127.0.0.1 >"$work/head.out" 2>&1
addr=$(sed -n 's/^gray start --address \([^ ]*\) .*/\1/p' "$work/head.out")
tokfile="$work/n0/token"
join() { # join N: node N joins on 127.0.0.(N+1)
	"$gray" start --address "$addr" --token-file "$tokfile" --num-cpus 2 --temp-dir "$work/n$1" \
		--node-ip-address "127.0.0.$(($1 + 1))" >"$work/n$1.out" 2>&1
}
join 1
join 2
echo "load before: $(cat /proc/loadavg)"
# Each line of train's output gets the time it came (for the waiting line).
"$work/train" --address "$addr" --token-file "$tokfile" --env CartPole-v1 --alg PPO \
	--config '{"num_workers": 5}' --stop '{"training_iteration": 100000}' 2>&1 |
	while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$work/train.out" &
trainpid=$!
status() { "$gray" status --json --address "$addr" --token-file "$tokfile"; }
result() { find "$work/results" -name result.json 2>/dev/null | head -1; }
iters() { # iterations logged so far
	f=$(result)
	if [ -n "$f" ]; then grep -c training_iteration "$f" || true; else echo 0; fi
}
until [ "$(iters)" -ge "$before" ]; do
	kill -0 "$trainpid" 2>/dev/null || { echo "nodedeath: train ended early:"; cat "$work/train.out"; exit 1; }
	sleep 0.2
done
# A non-head node that runs workers now.
victim=$(status | python3 -c '
import json, sys
st = json.load(sys.stdin)
live = [n for n in st["nodes"] if n["state"] == "alive" and not n["is_head"] and n.get("workers", 0) > 0]
print(live[0]["node_id"] if live else "")')
[ -n "$victim" ] || { echo "nodedeath: no non-head node runs workers"; status; exit 1; }
dir=$(grep -l "\"$victim\"" "$work"/n*/session.json | head -1 | xargs dirname)
pid=$(cat "$dir/node.pid")
kill -9 "-$pid" # the node's process group: its workers too
killed=$(date +%s.%N)
echo "nodedeath: killed node $victim (pid group $pid) at iteration $(iters)"
# Detection: the first read that shows the node dead.
while :; do
	read_at=$(status | python3 -c '
import json, sys, datetime
st = json.load(sys.stdin)
dead = any(n["node_id"] == sys.argv[1] and n["state"] != "alive" for n in st["nodes"])
print(datetime.datetime.fromisoformat(st["read_at"].replace("Z", "+00:00")).timestamp() if dead else "")' "$victim")
	[ -n "$read_at" ] && break
done
# Resumed (the next iteration ends), or train says what it waits for:
# then a replacement joins.
n=$(iters)
deadline=$(($(date +%s) + 60))
until [ "$(iters)" -gt "$n" ] || grep -q 'waiting for' "$work/train.out" || [ "$(date +%s)" -ge "$deadline" ]; do sleep 0.1; done
joined=""
if [ "$(iters)" -le "$n" ] && grep -q 'waiting for' "$work/train.out"; then
	join 3
	joined=$(date +%s.%N)
	n=$(iters)
	deadline=$(($(date +%s) + 120))
	until [ "$(iters)" -gt "$n" ] || [ "$(date +%s)" -ge "$deadline" ]; do sleep 0.1; done
fi
echo "load after: $(cat /proc/loadavg)"
python3 - "$(result)" "$killed" "$read_at" "$work/train.out" "$joined" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
killed, detected = float(sys.argv[2]), float(sys.argv[3])
joined = float(sys.argv[5]) if sys.argv[5] else None
print("nodedeath: detected %.2f s after the kill" % (detected - killed))
before = [r for r in rows if r["timestamp"] <= killed]
if before:
    print("nodedeath: the last iteration before the kill ended %.2f s before it" % (killed - before[-1]["timestamp"]))
for l in open(sys.argv[4]):
    t, _, text = l.partition(" ")
    if "waiting for" in text and float(t) > killed:
        print("nodedeath: %.2f s after the detection train said: %s" % (float(t) - detected, text.strip()))
        break
if joined is None:
    after = [r for r in rows if r["timestamp"] > detected]
    if after:
        print("nodedeath: the run's next iteration (%d) ended %.2f s after the detection" % (after[0]["training_iteration"], after[0]["timestamp"] - detected))
    else:
        print("nodedeath: neither an iteration nor a waiting line within a minute of the detection")
else:
    after = [r for r in rows if r["timestamp"] > joined]
    if after:
        print("nodedeath: a replacement joined; the run's next iteration (%d) ended %.2f s after `gray start` returned" % (after[0]["training_iteration"], after[0]["timestamp"] - joined))
    else:
        print("nodedeath: a replacement joined; no iteration ended within 2 minutes")
EOF
