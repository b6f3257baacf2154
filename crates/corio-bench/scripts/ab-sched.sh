#!/usr/bin/env bash
# A/B of the scheduler rows (chan, spawn --quick): each argument is a directory holding a
# corio-bench binary; rounds alternate them; prints the median of each corio row per build.
# usage: ROUNDS=5 ab-sched.sh DIR_A DIR_B
R=${ROUNDS:-5}
export OUT=${TMPDIR:-/tmp}/corio-ab-sched.out
for r in $(seq $R); do for b in "$@"; do
  $b/corio-bench chan spawn --quick --runs 1 2>/dev/null | grep '^corio' | awk -v b=$b '{print b"|"$1" "$2"|"$3"|"$5}' | tr -d ','
done; done > "$OUT"
python3 - "$@" <<'P'
import os,sys,statistics,collections
d=collections.defaultdict(list)
for l in open(os.environ['OUT']):
    b,impl,m,v=l.strip().split('|'); d[(impl,m,b)].append(float(v))
keys=sorted({(i,m) for i,m,b in d})
for i,m in keys:
    print(f"{i:16} {m:30}", "  ".join(f"{b}={statistics.median(d[(i,m,b)]):.1f}" for b in sys.argv[1:]))
P
