"""OpenPAI's job files (protocol v2 YAML, v1 JSON), their templates and extras, read into a
:class:`~assay.config.JobSpec`.
"""
