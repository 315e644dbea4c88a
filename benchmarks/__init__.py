"""Benchmark harness for vwt: `python -m benchmarks [--quick] [--json] [B1 ...]`.

Each benchmark builds its own fixture repositories in a temporary folder, times the tool and a
raw-git (or bare-Python) baseline alternately in the same run, and reports the ratio of the
medians against the target of SPEC.md section 7.
"""
