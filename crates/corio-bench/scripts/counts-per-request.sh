#!/usr/bin/env bash
# Counts per request of one server and of wrk (perf stat: task-clock, context switches,
# system calls, wake-ups, IPIs), for docs/net-bench.md. Needs perf and tracefs mounted
# (`mount -t tracefs nodev /sys/kernel/tracing`).
# usage: counts-per-request.sh BIN SERVER CONNS SECS  -> per-request counts, server and wrk
bin=$1; srv=$2; c=$3; secs=${4:-5}
ev='task-clock,context-switches,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto,syscalls:sys_enter_sched_yield,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_ctl,sched:sched_waking,ipi:ipi_send_cpu'
out=$(mktemp)
taskset -c 0 $bin __child http serve $srv > $out 2>/dev/null &
pid=$!
for t in $(seq 50); do grep -q '@addr' $out && break; sleep 0.1; done
addr=$(grep '@addr' $out | awk '{print $2}')
taskset -c 1 wrk -t1 -c$c -d1s http://$addr/plaintext >/dev/null 2>&1
perf stat -x, -e $ev -p $pid -o ${TMPDIR:-/tmp}/corio-counts-srv.perf sleep $((secs+1)) &
sp=$!
sleep 0.3
perf stat -x, -e $ev -o ${TMPDIR:-/tmp}/corio-counts-wrk.perf taskset -c 1 wrk -t1 -c$c -d${secs}s --latency http://$addr/plaintext > ${TMPDIR:-/tmp}/corio-counts-wrk.out 2>&1
wait $sp; kill $pid; wait $pid 2>/dev/null
reqs=$(awk '/requests in/ {print $1}' ${TMPDIR:-/tmp}/corio-counts-wrk.out)
rps=$(awk '/Requests\/sec/ {print $2}' ${TMPDIR:-/tmp}/corio-counts-wrk.out)
p99=$(awk '$1=="99%" {print $2}' ${TMPDIR:-/tmp}/corio-counts-wrk.out)
echo "$srv c$c rps=$rps p99=$p99 reqs=$reqs"
for side in srv wrk; do
  awk -F, -v r=$reqs -v s=$side '/^[0-9.]/ {n=$3; sub(/syscalls:sys_enter_/,"",n); sub(/sched:sched_/,"",n); sub(/ipi:ipi_send_cpu/,"ipi",n); if (n=="task-clock") printf "%s %s=%.2fus ", s, n, $1*1000/r; else printf "%s=%.4f ", n, $1/r} END {print ""}' ${TMPDIR:-/tmp}/corio-counts-$side.perf
done
rm -f $out
