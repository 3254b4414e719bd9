"""Experiments built on runs: probes, the merge sweep, the linear probe, the strategy sweep.

This layer sits above scoring and the report and below the Python API and the CLI: an experiment
runs the engine (often several times), scores the runs and writes its own report. Nothing below it
imports it. Nothing here is imported by ``import scopebench``.
"""
