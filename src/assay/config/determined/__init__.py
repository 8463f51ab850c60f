"""Determined's configs besides the experiment config (which is assay's own): command and
generic-task configs, and legacy ``module:TrialClass`` entrypoints.
"""
