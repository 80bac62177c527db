"""Operational figures computed from the database at scrape time, rendered for Prometheus at /metrics.

One function, `compute_figures()` (figures.py), reads everything with a few bounded aggregate
queries (ADR 0014); prometheus.py renders it for Prometheus, and the Oozie admin endpoints
(`oozieapi.admin`) render the same object as Oozie's instrumentation and Codahale metrics JSON.
Nothing is counted in process memory, so every web worker answers the same numbers.
"""

from __future__ import annotations

from monitoring.figures import (
    ENDED_ACTIONS_CACHE_KEY,
    ENDED_WORKFLOWS_CACHE_KEY,
    CommandLoad,
    Figures,
    FinishedCommand,
    compute_figures,
)
from monitoring.prometheus import SchedulerCollector, prometheus_text

__all__ = [
    "ENDED_ACTIONS_CACHE_KEY",
    "ENDED_WORKFLOWS_CACHE_KEY",
    "CommandLoad",
    "Figures",
    "FinishedCommand",
    "SchedulerCollector",
    "compute_figures",
    "prometheus_text",
]
