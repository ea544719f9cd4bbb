"""Statistics the plumb-vs-PyTorch comparisons share (python3-scipy is not a dependency)."""
import math
import statistics

# Two-sided 95% Student-t quantiles by degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086]


def geometric_interval(ratios):
    """Geometric mean of per-round ratios and its 95% t-interval (log scale), or Nones."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), None, None
    half = T975[min(len(logs) - 2, len(T975) - 1)] * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def fmt(x):
    return "n/a" if x is None else f"{x:.3f}"
