"""Benchmarks: `make bench` (python -m bench [NAME ...]) prints every figure.

Timings are medians of repeated runs (these machines are shared and noisy),
each shown beside its natural baseline.
"""
