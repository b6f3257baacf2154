#!/usr/bin/env bash
# A paired comparison of two servers, for ratios smaller than the spread of one run's rounds
# (docs/net-bench.md, "Fifteenth pass"). `corio-bench pair` runs the same method on the ten
# target pairs of corio's servers and their peers; this script is for other A/Bs (any two
# servers, or one build with two settings of an environment variable). Both servers run for
# the whole cell, pinned to CPU 0 (an idle corio, tokio or may server makes no wake-ups, so
# the one not under load costs the other nothing); the load, pinned to CPU 1, alternates
# between them in short windows, A B, B A, A B, ..., so that a drift of the machine's load
# lands on both sides of each pair. Prints each pair, then the median of the per-pair ratios
# A / B with a distribution-free 95 % interval (the sign test's, as `corio-bench pair`) and
# the number of pairs above 1; the same for p99 (keep-alive only: wrk's own latencies of a
# pipelined batch are not kept; `corio-bench pair` reads them from the histogram).
#
# usage: pair.sh PAIRS SECS KIND CONNS BIN A B
#   KIND  ka | pipe (wrk -t1 -cCONNS, pipelined 16 deep) | echo (the `echo load` client, CONNS clients)
#   A, B  servers: for ka/pipe corio | corio-hyper | may_minihttp | hyper-tokio | go;
#         for echo corio | corio-async | tokio | may | go; a server may be preceded by
#         environment settings for its process, `VAR=value,VAR2=value:server` (an A/B of a
#         build that reads a setting from the environment)
# env:  BIN_A  another binary for server A (same `__child GROUP serve NAME` interface), e.g.
#       scripts/uring-echo's minimal servers ("Nineteenth pass"); B always runs from BIN
#       FRESH=1  the two servers are never up together: each window starts its server anew
#       and gives it a 1 s warm-up of the same load first (for a server that spins while idle,
#       which would take CPU 0 from the other one)
# example: pair.sh 30 3 ka 256 target/release/corio-bench corio may_minihttp
set -u
pairs=$1; secs=$2; kind=$3; conns=$4; bin=$5; a=$6; b=$7
lua=${TMPDIR:-/tmp}/corio-pair-pipe.lua
cat > "$lua" <<'L'
init = function(args) local r = {} for i = 1, 16 do r[i] = wrk.format(nil, "/plaintext") end req = table.concat(r) end
request = function() return req end
L
case $kind in echo) group=echo ;; *) group=http ;; esac

fresh=${FRESH:-0}
declare -A pid addr
# Starts server $1 (pinned to CPU 0) and records its pid and address.
start() {
  local s=$1 out envs=() srv=$1 sbin=$bin
  out=$(mktemp)
  if [[ $s == *:* ]]; then IFS=, read -ra envs <<< "${s%%:*}"; srv=${s#*:}; fi
  [ "$s" = "$a" ] && sbin=${BIN_A:-$bin}
  env "${envs[@]}" taskset -c 0 "$sbin" __child $group serve "$srv" > "$out" 2>/dev/null &
  pid[$s]=$!
  for _ in $(seq 100); do grep -q '@addr' "$out" && break; sleep 0.1; done
  addr[$s]=$(awk '/@addr/ {print $2}' "$out")
  rm -f "$out"
  [ -n "${addr[$s]}" ] || { echo "server $s did not start" >&2; kill "${pid[@]}"; exit 1; }
}
# Stops server $1.
stop() { kill "${pid[$1]}" 2>/dev/null; wait "${pid[$1]}" 2>/dev/null; pid[$1]=; }
# (Also run as a FRESH window's command substitution ends, where bash may see `pid` unset.)
trap 'for p in "${pid[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done; true' EXIT
if [ "$fresh" != 1 ]; then for s in "$a" "$b"; do start "$s"; done; fi

# One window of load against server $1: prints "rate p99_us" (p99 empty for echo).
window() {
  local s=$1 d=$2 res
  case $kind in
    echo)
      res=$(taskset -c 1 timeout 120 "$bin" __child echo load "${addr[$s]}" "$conns" $((d * 1000)) 2>&1)
      echo "$(echo "$res" | awk '/@messages_per_sec/ {print $2}') -" ;;
    *)
      local extra=""; [ "$kind" = pipe ] && extra="-s $lua"
      res=$(taskset -c 1 timeout 120 wrk -t1 -c"$conns" -d"${d}s" --latency $extra "http://${addr[$s]}/plaintext" 2>&1)
      echo "$res" | awk '
        /Requests\/sec/ {r = $2}
        $1 == "99%" { v = $2
          if (v ~ /ms$/) { sub(/ms/, "", v); v *= 1000 } else if (v ~ /us$/) { sub(/us/, "", v) }
          else if (v ~ /s$/) { sub(/s/, "", v); v *= 1e6 }
          p = v }
        END { print r, (p == "" || pipe ? "-" : p) }' pipe=$([ "$kind" = pipe ] && echo 1 || echo 0) ;;
  esac
}

# A measured window against server $1; with FRESH=1, in a server started for it, warmed up.
measure() {
  if [ "$fresh" = 1 ]; then start "$1"; window "$1" 1 > /dev/null; fi
  window "$1" "$secs"
  if [ "$fresh" = 1 ]; then stop "$1"; fi
}

if [ "$fresh" != 1 ]; then for s in "$a" "$b"; do window "$s" 1 > /dev/null; done; fi   # warm-up
data=$(mktemp)
for i in $(seq "$pairs"); do
  if [ $((i % 2)) = 1 ]; then first=$a; second=$b; else first=$b; second=$a; fi
  declare -A got
  got[$first]=$(measure "$first")
  got[$second]=$(measure "$second")
  echo "$i ${got[$a]} ${got[$b]}" | tee -a "$data" >&2
done

PYTHONPATH="$(dirname "$0")" python3 - "$data" "$a" "$b" "$kind $conns" <<'PY'
import statistics, sys
from signtest import sign_interval
path, a, b, cell = sys.argv[1:]
rows = [l.split() for l in open(path) if l.strip()]
def summary(name, ia, ib):
    ratios = []
    for r in rows:
        try:
            ratios.append(float(r[ia]) / float(r[ib]))
        except (ValueError, ZeroDivisionError):
            pass
    if not ratios:
        return
    ci = sign_interval(ratios)
    ci = f"[95 % {ci[0]:.3f}-{ci[1]:.3f}]" if ci else "[no interval below 6 pairs]"
    above = sum(x > 1 for x in ratios)
    print(f"{cell}: {name} {a}/{b} median {statistics.median(ratios):.3f} "
          f"{ci}, above 1 in {above} of {len(ratios)}; "
          f"{a} {statistics.median(float(r[ia]) for r in rows if r[ia] != '-'):.0f}, "
          f"{b} {statistics.median(float(r[ib]) for r in rows if r[ib] != '-'):.0f}")
summary("rate", 1, 3)
summary("p99", 2, 4)
PY
rm -f "$data"
