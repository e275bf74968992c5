"""Benchmark and load tools for the serving container: `python -m bench --help`."""
