"""The chaos probe: a task that notes who ran it, in the database, and the table it writes to.

Coordinator actions call it through their workflow node (its row names the node and the
attempt); keyed jobs run it inside their command's transaction (`transactional=True`), so
only the run whose command committed leaves a row.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from celery import shared_task
from django.db import connection

from workflows.runner import current_run

TABLE = "chaos_probe"
DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL,
    ident TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started DOUBLE PRECISION NOT NULL,
    ended DOUBLE PRECISION NOT NULL
)
"""


def create_table() -> None:
    """Create the probe's table (in the chaos run's own database)."""
    with connection.cursor() as cursor:
        cursor.execute(DDL)


@shared_task(name="chaos.probe")
def probe(configuration: dict[str, Any], nominal_time: str = "") -> str:
    """Sleep `seconds`, then write one row: what ran (node and attempt, or key and number), where, when."""
    started = time.time()
    time.sleep(float(configuration.get("seconds", 0)))
    run = current_run()
    if run is not None:
        kind, ident, attempt = "action", run[0], run[1]
    else:
        kind, ident, attempt = "keyed", f"{configuration['key']}#{configuration['n']}", 0
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (kind, ident, attempt, host, pid, started, ended) "  # noqa: S608 - our table
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [kind, ident, attempt, socket.gethostname(), os.getpid(), started, time.time()],
        )
    return ident


def probe_pids(ident_prefix: str) -> list[int]:
    """The pids of the processes that ran probes whose ident starts with `ident_prefix`."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT pid FROM {TABLE} WHERE ident LIKE %s", [ident_prefix + "%"])  # noqa: S608
        return [int(pid) for (pid,) in cursor.fetchall()]
