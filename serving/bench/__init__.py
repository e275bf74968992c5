"""Benchmark and load tools for the serving container: `python -m serving.bench --help`."""
