"""The sign test's 95 % interval for a median, as corio-bench's pair case computes it
(cases/pair.rs, `interval`); imported by pair.sh and uring-echo/rotate.sh."""
import math


def sign_interval(values):
    """(x(k), x(n+1-k)) of the sorted values, with k the largest rank whose
    P(Binomial(n, 1/2) < k) <= 2.5 %; None below 6 values."""
    n, k, below = len(values), 0, 0.0
    for i in range(n // 2):
        below += math.comb(n, i) / 2 ** n
        if below > 0.025:
            break
        k = i + 1
    s = sorted(values)
    return (s[k - 1], s[n - k]) if k else None
