"""The filter step: one module per quality gate (shortcut, RefineBot, panels, quotas).

The step that runs them is :mod:`scopebench.curate.filtering.step`.
"""
