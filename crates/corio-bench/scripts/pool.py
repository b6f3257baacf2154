"""Pools `corio-bench pair --json` runs: the per-pair ratios (`samples`) of every row of
the same cell, servers and metric, from any number of files, with the sign test's 95 %
interval of their median (signtest.py, as the case computes it).

usage: python3 pool.py RUN.json [RUN.json ...]"""
import json
import re
import statistics
import sys

from signtest import sign_interval

rows = {}
for path in sys.argv[1:]:
    for line in open(path):
        m = json.loads(line)
        if m.get("case") != "pair" or not m.get("samples"):
            continue
        cell = next(p for p in m["note"].split("; ") if "pairs ×" in p)
        cell = re.sub(r", \d+ pairs × .*", "", cell)
        rows.setdefault((cell, m["impl"], m["metric"]), []).extend(m["samples"])

better = {"rate_ratio": ("ahead", "behind"), "p99_ratio": ("lower", "higher"),
          "cpu_ratio": ("lower", "higher")}
for (cell, impl, metric), v in rows.items():
    lo_hi = sign_interval(v)
    if lo_hi is None:
        verdict, ci = "too few pairs", ""
    else:
        lo, hi = lo_hi
        up, down = better[metric]
        if metric == "rate_ratio":
            verdict = up if lo > 1 else down if hi < 1 else "level"
        else:
            verdict = up if hi < 1 else down if lo > 1 else "level"
        ci = f"[{lo:.3f}–{hi:.3f}]"
    above = sum(x > 1 for x in v)
    print(f"{cell:32} {impl:32} {metric:10} {statistics.median(v):.3f} {ci:15} "
          f"{verdict:7} ({above} of {len(v)} above 1)")
