#!/usr/bin/env bash
# Rotating windows of corio-bench's echo load over servers that all stay up, pinned to CPU 0
# (the load on CPU 1): round r visits the servers starting from the r-th, so that none always
# goes first. Per window: messages/s and the server's CPU per message (the on-CPU time of all
# its threads from /proc/<pid>/task/*/schedstat, ns). Then, for every server against the
# first, the median per-round ratio with the sign test's 95 % interval (as `corio-bench pair`).
#
# usage: rotate.sh ROUNDS MS CLIENTS SERVER...
#   (build first: `cargo build --release` in this directory, and corio-bench in the repository's)
#   SERVER  uexp:epoll | uexp:uring | uexp:burst | uexp:epoll-mt (this directory's servers)
#           | cb:NAME (`corio-bench __child echo serve NAME`: corio, corio-async, tokio, may;
#           go is not one)
# env: CB (corio-bench binary, default target/release/corio-bench of the repository),
#      UX (this experiment's binary, default its target/release/uring-echo)
# example: rotate.sh 12 2000 100 uexp:epoll uexp:uring cb:corio-async cb:tokio cb:corio cb:may
set -u
here=$(cd "$(dirname "$0")" && pwd)
rounds=$1; ms=$2; clients=$3; shift 3
CB=${CB:-$here/../../../../target/release/corio-bench}
UX=${UX:-$here/target/release/uring-echo}
declare -A pid addr
for s in "$@"; do
  out=$(mktemp)
  case $s in
    uexp:*) taskset -c 0 "$UX" "${s#uexp:}" > "$out" 2>&1 & ;;
    cb:*) taskset -c 0 "$CB" __child echo serve "${s#cb:}" > "$out" 2>&1 & ;;
    *) echo "unknown server $s" >&2; exit 2 ;;
  esac
  pid[$s]=$!
  for _ in $(seq 100); do grep -q '@addr' "$out" && break; sleep 0.1; done
  addr[$s]=$(awk '/@addr/ {print $2}' "$out"); rm -f "$out"
  [ -n "${addr[$s]}" ] || { echo "server $s did not start" >&2; kill "${pid[@]}"; exit 1; }
done
trap 'kill "${pid[@]}" 2>/dev/null' EXIT
# %.0f: mawk's %d stops at 2^31 - 1 ns.
cpu() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%.0f\n", s}'; }
servers=("$@"); n=${#servers[@]}
for s in "${servers[@]}"; do taskset -c 1 "$CB" __child echo load "${addr[$s]}" "$clients" 1000 > /dev/null; done
data=$(mktemp)
for r in $(seq 0 $((rounds - 1))); do
  for i in $(seq 0 $((n - 1))); do
    s=${servers[$(((r + i) % n))]}
    c0=$(cpu "${pid[$s]}")
    res=$(taskset -c 1 "$CB" __child echo load "${addr[$s]}" "$clients" "$ms")
    c1=$(cpu "${pid[$s]}")
    m=$(echo "$res" | awk '/@messages / {print $2}')
    rate=$(echo "$res" | awk '/@messages_per_sec/ {print $2}')
    echo "$r $s $rate $(((c1 - c0) / m))" | tee -a "$data" >&2
  done
done
PYTHONPATH="$here/.." python3 - "$data" "${servers[@]}" <<'PY'
import statistics, sys
from signtest import sign_interval
path, ref, *others = sys.argv[1:]
got = {}
for line in open(path):
    r, s, rate, cpu = line.split()
    got[(int(r), s)] = (float(rate), float(cpu))
rounds = sorted({r for r, _ in got})
def said(v):
    ci = sign_interval(v)
    return f"[95 % {ci[0]:.3f}-{ci[1]:.3f}]" if ci else "[no interval below 6 rounds]"
for s in [ref] + others:
    rates = [got[(r, s)][0] for r in rounds]
    cpus = [got[(r, s)][1] for r in rounds]
    line = f"{s}: {statistics.median(rates):,.0f} msg/s, {statistics.median(cpus):,.0f} ns CPU/msg"
    if s != ref:
        rr = [got[(r, s)][0] / got[(r, ref)][0] for r in rounds]
        cr = [got[(r, s)][1] / got[(r, ref)][1] for r in rounds]
        line += (f"; / {ref}: rate {statistics.median(rr):.3f} {said(rr)}, "
                 f"CPU {statistics.median(cr):.3f} {said(cr)}")
    print(line)
PY
rm -f "$data"
