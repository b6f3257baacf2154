#!/usr/bin/env bash
# Counts per message of one echo server under corio-bench's echo load (perf stat: task-clock,
# context switches, system calls), as counts-per-request.sh does for the http servers. Needs
# perf and tracefs mounted (`mount -t tracefs nodev /sys/kernel/tracing`).
# usage: counts-per-message.sh BIN SERVER CLIENTS SECS  (SERVER: corio, corio-async, tokio, may)
bin=$1; srv=$2; c=${3:-100}; secs=${4:-3}
ev='task-clock,context-switches,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_sched_yield,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_ctl'
out=$(mktemp)
taskset -c 0 "$bin" __child echo serve "$srv" > "$out" 2>/dev/null &
pid=$!
for _ in $(seq 50); do grep -q '@addr' "$out" && break; sleep 0.1; done
addr=$(awk '/@addr/ {print $2}' "$out")
taskset -c 1 "$bin" __child echo load "$addr" "$c" 1000 > /dev/null
perf stat -x, -e "$ev" -p "$pid" -o "$out.perf" sleep "$((secs + 1))" &
sp=$!
sleep 0.3
res=$(taskset -c 1 "$bin" __child echo load "$addr" "$c" "$((secs * 1000))")
wait $sp; kill $pid; wait $pid 2>/dev/null
m=$(echo "$res" | awk '/@messages / {print $2}')
rate=$(echo "$res" | awk '/@messages_per_sec/ {print $2}')
awk -F, -v m="$m" -v s="$srv" -v r="$rate" 'BEGIN {printf "%s %.0f msg/s: ", s, r}
  /^[0-9.]/ {n=$3; sub(/syscalls:sys_enter_/,"",n); if (n=="task-clock") printf "%s=%.2fus ", n, $1*1000/m; else printf "%s=%.4f ", n, $1/m}
  END {print ""}' "$out.perf"
rm -f "$out" "$out.perf"
