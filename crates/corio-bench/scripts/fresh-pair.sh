#!/usr/bin/env bash
# A paired comparison in which the two servers are never up together: every 2 s window of
# `wrk -t1 -cCONNS` (after a 1 s warm-up) has a fresh server process of its own, pinned to CPU 0
# (wrk on CPU 1), in the order A B, B A, A B, ... For a server that spins while idle, which
# would take CPU 0 from the other one in `pair.sh`'s method (both up, the load alternating);
# docs/net-bench.md, "Nineteenth pass". Prints the median of the per-pair ratios of
# requests/s A / B, their range and how many are above 1 (keep-alive only).
#
# usage: fresh-pair.sh PAIRS CONNS "COMMAND A" "COMMAND B"
#   COMMAND  a server command line that prints `@addr HOST:PORT`, e.g.
#            "target/release/corio-bench __child http serve may_minihttp" or
#            "scripts/uring-echo/target/release/uring-echo http-epoll-spin"
set -u
pairs=$1; conns=$2; cmd_a=$3; cmd_b=$4

# One window: a fresh server, warmed up, then 2 s of load; prints its requests/s.
window() {
  local out pid addr
  out=$(mktemp)
  # shellcheck disable=SC2086 # the command is a command line
  taskset -c 0 $1 > "$out" 2>/dev/null &
  pid=$!
  for _ in $(seq 50); do grep -q '@addr' "$out" && break; sleep 0.1; done
  addr=$(awk '/@addr/ {print $2}' "$out")
  rm -f "$out"
  [ -n "$addr" ] || { echo "server did not start: $1" >&2; kill "$pid"; exit 1; }
  taskset -c 1 wrk -t1 -c"$conns" -d1s "http://$addr/plaintext" > /dev/null
  taskset -c 1 wrk -t1 -c"$conns" -d2s "http://$addr/plaintext" | awk '/Requests\/sec/ {print $2}'
  kill "$pid"; wait "$pid" 2>/dev/null
}

for i in $(seq "$pairs"); do
  if [ $((i % 2)) = 1 ]; then a=$(window "$cmd_a"); b=$(window "$cmd_b")
  else b=$(window "$cmd_b"); a=$(window "$cmd_a"); fi
  echo "$i $a $b"
done | tee /dev/stderr | python3 -c '
import sys
r = sorted(float(a) / float(b) for _, a, b in (l.split() for l in sys.stdin))
n = len(r)
med = r[n // 2] if n % 2 else (r[n // 2 - 1] + r[n // 2]) / 2
print("A / B requests/s: median %.3f, range %.3f-%.3f, above 1 in %d of %d" % (med, r[0], r[-1], sum(x > 1 for x in r), n))
'
