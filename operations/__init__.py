"""Resilient operations (seed 003): an operation on a target split into jobs run in parallel, completed exactly once."""
