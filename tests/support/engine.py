"""The command engine run in this process: the `in_process_engine` fixture, and loops running queued commands.

A plugin (tests/conftest.py `pytest_plugins`): every test may ask for `in_process_engine`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings
from django.utils import timezone

from project.celery import app
from tests.support.celery_app import point_celery_at
from xcommands import engine
from xcommands.choices import CommandStatus
from xcommands.models import Command


@pytest.fixture
def in_process_engine(redis_url: str) -> Iterator[None]:
    """Point this process's Celery app at the private Redis; no same-key drain in process()."""
    old = (app.conf.broker_url, app.conf.result_backend)
    point_celery_at(app, redis_url, redis_url)
    with override_settings(COMMAND_DRAIN_MAX=1):
        yield
    point_celery_at(app, *old)


def run_pending_commands(rounds: int = 100) -> int:
    """Run every runnable command head until none is left; how many ran."""
    ran = 0
    for _ in range(rounds):
        heads = [c.pk for c in Command.objects.filter(status=CommandStatus.PENDING).order_by("seq")]
        progressed = [pk for pk in heads if engine.process(pk) != "not-runnable"]
        ran += len(progressed)
        if not progressed:
            break
    return ran


def run_all(rounds: int = 50) -> int:
    """Run every queued command, retries included (their backoff is cut short); how many ran."""
    ran = 0
    for _ in range(rounds):
        Command.objects.filter(status=CommandStatus.PENDING).update(not_before=timezone.now())
        done = run_pending_commands()
        ran += done
        if not done:
            break
    return ran
