"""The reliability and security run (``run_reliability.py``)."""
