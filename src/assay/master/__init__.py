"""The master: orchestration of experiments, trials, scheduling, agents and storage."""
