"""Every try keeps its story: what its task logged and printed, its error's full traceback, bounded and masked.

Nodes run in this process as a worker runs them (claim, run, record); a rerun, a retry and a
relaunch after a lost worker each add a try, and the earlier ones stay.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from celery import shared_task
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from kernel.capture import Capture
from kernel.models import TaskTry
from kernel.secrets import MASK
from kernel.tries import purge
from tests.support.engine import run_pending_commands
from tests.support.workflow_apps import app, celery, drive, submit
from workflows import runner
from workflows.choices import NodeStatus as N
from workflows.choices import WorkflowStatus as W
from workflows.models import WorkflowNode
from workflows.recovery import relaunch_lost
from workflows.services import request_rerun

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

log = logging.getLogger("tests.tries")
SECRET = "s3cr3t-value-42"


def _deep_failure(path: str) -> None:
    raise ValueError(f"no input at {path}")


@shared_task(name="tests.tries.noisy")
def noisy(path: str, lines: str = "3") -> dict[str, str]:
    """Log (with a secret in the text), print, and fail from a nested call unless `path` exists."""
    for number in range(int(lines)):
        log.warning("noisy line %s of %s, password=%s", number + 1, lines, SECRET)
    print(f"noisy printed for {path}")  # noqa: T201 - what a task prints is part of its try's log
    if not Path(path).exists():
        _deep_failure(path)
    return {}


def _workflow(tmp_path: Path, needed: Path, lines: int = 3) -> Any:
    directory = app(tmp_path, celery("noisy", "tests.tries.noisy", str(needed), str(lines), ok="end"))
    return submit(directory, db_password=SECRET)


def test_a_failed_try_keeps_its_log_its_output_and_its_whole_traceback_masked(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path, tmp_path / "missing")
    drive()
    workflow.refresh_from_db()
    assert workflow.status == W.KILLED
    (kept,) = TaskTry.objects.filter(job_id=workflow.id)
    assert (kept.kind, kept.name, kept.status, kept.run, kept.attempt) == ("node", "noisy", N.ERROR, 0, 1)
    assert kept.object_id == f"{workflow.id}@noisy" and kept.worker.startswith("test")
    assert kept.started_at is not None and kept.started_at <= kept.ended_at
    assert "noisy line 1 of 3" in kept.log and "noisy line 3 of 3" in kept.log
    assert f"noisy printed for {tmp_path / 'missing'}" in kept.log
    assert "Traceback (most recent call last)" in kept.traceback
    assert "_deep_failure" in kept.traceback and "ValueError: no input at" in kept.traceback
    assert kept.error_code == "ValueError" and "no input at" in kept.error_message
    # Kept as it was, like the job's configuration; shown through the reader's masker: the owner sees the
    # job's secret (db.password), another user does not.
    assert SECRET in kept.log
    api = APIClient()
    for reader, shown in ((workflow.owner, True), (User.objects.create_user("bob"), False)):
        api.force_authenticate(reader)
        (answer,) = api.get(f"/api/v1/workflows/{workflow.id}/tries/").json()["results"]
        assert (SECRET in answer["log"]) is shown and (MASK in answer["log"]) is not shown
        assert "noisy line 3 of 3" in answer["log"] and "_deep_failure" in answer["traceback"]


def test_a_long_log_keeps_its_tail_and_says_what_was_dropped(tmp_path: Path, settings: Any) -> None:
    settings.TRY_LOG_MAX_CHARS = 400
    needed = tmp_path / "needed"
    needed.touch()
    workflow = _workflow(tmp_path, needed, lines=40)
    drive()
    (kept,) = TaskTry.objects.filter(job_id=workflow.id)
    assert kept.status == N.OK and kept.traceback == ""
    assert kept.log.startswith("[... ") and "earlier characters dropped" in kept.log
    assert kept.log_dropped > 0 and len(kept.log) < 400 + 100
    assert "noisy line 40 of 40" in kept.log and "noisy line 1 of 40" not in kept.log


def test_a_rerun_adds_tries_and_the_failed_run_stays(tmp_path: Path) -> None:
    needed = tmp_path / "needed"
    workflow = _workflow(tmp_path, needed)
    drive()
    needed.touch()
    request_rerun(workflow.id, {"oozie.wf.rerun.failnodes": "true"}, check=lambda _: None)
    run_pending_commands()
    drive()
    workflow.refresh_from_db()
    assert (workflow.status, workflow.run) == (W.SUCCEEDED, 1)
    runs = list(TaskTry.objects.filter(job_id=workflow.id).order_by("id").values_list("run", "status", "error_code"))
    assert runs == [(0, N.ERROR, "ValueError"), (1, N.OK, "")]
    first = TaskTry.objects.filter(job_id=workflow.id).order_by("id").first()
    assert first is not None and "_deep_failure" in first.traceback


def test_a_relaunch_after_a_lost_worker_adds_a_lost_try(tmp_path: Path) -> None:
    needed = tmp_path / "needed"
    needed.touch()
    workflow = _workflow(tmp_path, needed)
    run_pending_commands()
    node = WorkflowNode.objects.get(workflow=workflow, name="noisy")
    assert runner.claim(node.id, node.attempt, "w9@gone:4242") is not None
    WorkflowNode.objects.filter(pk=node.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert relaunch_lost(timezone.now()) == (1, 0)
    drive()
    kept = list(TaskTry.objects.filter(object_id=node.id).order_by("id").values_list("attempt", "status", "worker"))
    assert [(a, s) for a, s, _ in kept] == [(1, "LOST"), (2, N.OK)]
    assert kept[0][2] == "w9@gone:4242"
    lost = TaskTry.objects.get(object_id=node.id, status="LOST")
    assert "w9@gone:4242 lost" in lost.error_message


def test_old_tries_are_purged_after_the_retention(tmp_path: Path, settings: Any) -> None:
    settings.TRY_LOG_RETENTION_DAYS = 7
    now = timezone.now()
    for days in (1, 8, 30):
        TaskTry.objects.create(kind="node", object_id=f"x@{days}", status="OK", ended_at=now - timedelta(days=days))
    assert purge(now) == 2
    assert list(TaskTry.objects.values_list("object_id", flat=True)) == ["x@1"]


def test_a_capture_keeps_the_tail_within_its_limit() -> None:
    capture = Capture(limit=10, traceback_limit=50)
    for chunk in ("abcdef", "ghijkl", "mn"):
        capture.write(chunk)
    assert capture.size == 10 and capture.dropped == 4
    assert capture.text().endswith("efghijklmn") and "4 earlier characters dropped" in capture.text()
    try:
        raise KeyError("x" * 200)
    except KeyError as exc:
        capture.note_exception(exc)
    assert capture.traceback.startswith("[... ") and capture.traceback.endswith("x'\n")
