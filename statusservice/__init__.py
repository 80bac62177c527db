"""Periodic services driven by celery beat: triggers, status, recovery."""
