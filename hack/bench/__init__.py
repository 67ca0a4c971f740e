"""Benchmarks of the product's hot paths, each with its bar (run with `make bench` or `python -m hack.bench`)."""
