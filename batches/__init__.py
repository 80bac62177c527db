"""Batches: submissions expanding into jobs that walk a staged pipeline."""
