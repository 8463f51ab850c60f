"""NNI's experiment configs (v2, and v1 as nnictl reads it): keys, search spaces, tuners and
assessors, read into assay's experiment config with every NNI path kept for errors.
"""
