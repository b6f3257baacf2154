#!/usr/bin/env bash
# A/B of HTTP servers under wrk, interleaved round by round (docs/net-bench.md): each
# label=BINARY:SERVER is started pinned to CPU 0 (`BINARY __child http serve SERVER`), warmed up
# for 1 s, then loaded by wrk pinned to CPU 1; prints every run and the medians.
# usage: CONNS="16 64" ab-http.sh ROUNDS SECS ka|pipe label=bin:server ...
# server: corio | corio-hyper | may_minihttp | hyper-tokio | go
rounds=$1; secs=$2; mode=$3; shift 3
CONNS=${CONNS:-"16 64 256"}
lua=${TMPDIR:-/tmp}/corio-ab-pipe.lua
cat > $lua <<'L'
init = function(args) local r = {} for i = 1, 16 do r[i] = wrk.format(nil, "/plaintext") end req = table.concat(r) end
request = function() return req end
L
declare -A R P
for c in $CONNS; do
 for r in $(seq $rounds); do
  n=$#; i=0
  specs=("$@")
  for k in $(seq 0 $((n-1))); do
   spec=${specs[$(( (k + r) % n ))]}
   label=${spec%%=*}; rest=${spec#*=}; bin=${rest%%:*}; srv=${rest#*:}
   out=$(mktemp)
   taskset -c 0 $bin __child http serve $srv > $out 2>/dev/null &
   pid=$!
   for t in $(seq 50); do grep -q '@addr' $out && break; sleep 0.1; done
   addr=$(grep '@addr' $out | awk '{print $2}')
   taskset -c 1 wrk -t1 -c64 -d1s http://$addr/plaintext >/dev/null 2>&1
   if [ $mode = pipe ]; then extra="-s $lua"; else extra=""; fi
   res=$(taskset -c 1 timeout 60 wrk -t1 -c$c -d${secs}s --latency $extra http://$addr/plaintext 2>&1)
   kill $pid; wait $pid 2>/dev/null
   rps=$(echo "$res" | awk '/Requests\/sec/ {print $2}')
   p99=$(echo "$res" | awk '$1=="99%" {v=$2; if (v ~ /ms$/) {sub(/ms/,"",v); v*=1000} else if (v ~ /us$/) {sub(/us/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1e6}; print v}')
   R[$c,$label]+="$rps "; P[$c,$label]+="$p99 "
   echo "c$c r$r $label $rps p99=${p99}us" >&2
   rm -f $out
  done
 done
done
med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
for c in $CONNS; do for spec in "$@"; do label=${spec%%=*}
 echo "c$c $label rps_med=$(echo ${R[$c,$label]} | med) p99_med=$(echo ${P[$c,$label]} | med)us  all: ${R[$c,$label]}"
done; done
