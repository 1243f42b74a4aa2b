#!/usr/bin/env python3
"""TensorBoard's scalar smoothing ("classicSmoothing": a debiased exponential moving average), the
reference for engine::report::smoothDebiased. Non-finite values come out as NaN and do not count, as
smoothDebiased's contract says (TensorBoard itself passes them through unchanged).

usage: smoothing_reference.py WEIGHT < values   (one value per line: a number, nan, inf or -inf)
prints one smoothed value per line, repr()'d so that every bit survives.
"""
import math
import sys


def smooth(values, weight):
    last = 0.0
    num_accum = 0
    out = []
    for value in values:
        if not math.isfinite(value):
            out.append(math.nan)
            continue
        last = last * weight + (1 - weight) * value
        num_accum += 1
        debias_weight = 1.0
        if weight != 1.0:
            debias_weight = 1.0 - math.pow(weight, num_accum)
        out.append(last / debias_weight)
    return out


def main():
    weight = float(sys.argv[1])
    values = [float(line) for line in sys.stdin if line.strip()]
    for value in smooth(values, weight):
        print(repr(value))


if __name__ == "__main__":
    main()
