"""Timing pages the way every page benchmark does: a warm-up, the queries of one request, then `repeat` timed ones."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.test import Client


@dataclass(frozen=True)
class Timed:
    """One page's timings: milliseconds of each timed request (sorted), its queries, its size."""

    samples_ms: list[float]
    queries: int
    size: int


def time_requests(client: Client, url: str, repeat: int) -> Timed:
    """GET `url` once to warm up (RuntimeError unless 200), once counting its queries, then `repeat` times timed."""
    response = client.get(url)
    if response.status_code != 200:
        raise RuntimeError(f"{url}: HTTP {response.status_code} {response.content[:300]!r}")
    queries: list[str] = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client.get(url)
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        client.get(url)
        samples.append((time.perf_counter() - started) * 1000)
    return Timed(sorted(samples), len(queries), len(response.content))
