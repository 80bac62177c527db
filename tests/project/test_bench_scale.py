"""`bench scale` at a tiny size: every figure measured on both databases, judged, and nothing of the run left behind.

Not a timed test: the figures are for the benchmark's runs (docs/benchmarks.md, ADR 0039), not for CI.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from kernel.models import StatusRecord, TaskTry
from tooling.benchmarks.scale import compare, delete_scale_history, page_urls, store_scale_history
from workflows.models import WorkflowJob, WorkflowNode

TRIGGER = {"trigger_p99_s", "trigger_p50_s"}
FIGURES = {
    *TRIGGER, "materialize_actions_per_s", "purge_pass_s", "purge_rows",
    *(f"page_{name}_ms" for name in page_urls("x")), *(f"page_{name}_queries" for name in page_urls("x")),
}
#: The trigger's timing waits for a whole minute at least 20 s ahead, twice (about 100 s): left out unless asked.
TIMES_TRIGGER = os.environ.get("BENCH_SCALE_TRIGGER") == "1"
STAMPED = ((CoordinatorJob, "id"), (CoordinatorAction, "id"), (WorkflowJob, "id"), (WorkflowNode, "id"),
           (TaskTry, "job_id"), (StatusChange, "job_id"), (StatusRecord, "object_id"))
HISTORY = (CoordinatorJob, CoordinatorAction, WorkflowJob, WorkflowNode, TaskTry, StatusChange, StatusRecord)


@pytest.mark.integration
def test_a_tiny_scale_bench_reports_every_figure_and_cleans_up(
    worker_env: Callable[..., dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 jobs and 500 actions of history (and 5 due jobs with BENCH_SCALE_TRIGGER=1): each figure on both databases,
    a ratio and verdict for each timing, a budget verdict for each page, the history stored as asked, no row left."""
    env = worker_env()
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])  # its workers and beat use the test database
    monkeypatch.setenv("REDIS_URL", env["REDIS_URL"])  # and the test Redis
    out, err = StringIO(), StringIO()
    with override_settings(REDIS_URL=env["REDIS_URL"]):
        call_command("bench", "scale", "--json", "--jobs", "20", "--history", "500", "--trigger-jobs",
                     "5" if TIMES_TRIGGER else "0", "--actions", "120", "--repeat", "1", "--workers", "1",
                     stdout=out, stderr=err)
    figures = json.loads(out.getvalue())
    assert set(figures["figures"]) == (FIGURES if TIMES_TRIGGER else FIGURES - TRIGGER)
    assert TIMES_TRIGGER or err.getvalue().count("trigger latency: not timed") == 2
    assert (figures["jobs"], figures["history_actions"]) == (20, 500)
    assert figures["rows_stored"] == {"jobs": 20, "actions": 500, "workflows": 500, "nodes": 500, "tries": 500,
                                      "status_changes": 500, "status_records": 500}
    for name, row in figures["figures"].items():
        assert row["empty"] is not None and row["big"] is not None, name
        if name.endswith(("_ms", "_per_s")) or name in {"trigger_p99_s", "purge_pass_s"}:
            assert row["empty"] > 0 and row["big"] > 0, name
            assert row["within_1_5x"] == ("yes" if row["ratio"] <= 1.5 else "NO"), name
    assert figures["figures"]["purge_rows"]["empty"] == figures["figures"]["purge_rows"]["big"] > 0  # the set, no more
    pages = [row for name, row in figures["figures"].items() if name.startswith("page_") and name.endswith("_ms")]
    assert len(pages) == len(page_urls("x")) and all(row["under_300_ms"] == ("yes" if row["big"] < 300 else "NO")
                                                      for row in pages)
    assert "ratio" in err.getvalue() and "rows/s" in err.getvalue()  # the table and the build's progress
    stamps = re.findall(r"\(stamp ([0-9]{15})\)", err.getvalue())
    assert len(stamps) == 2  # the probe set and the history
    for stamp in stamps:  # (the trigger bench's own command tries are not the history's)
        for model, column in STAMPED:
            assert not model.objects.filter(**{f"{column}__contains": f"-{stamp}-"}).exists(), model.__name__
    assert not (CoordinatorJob.objects.exists() or CoordinatorAction.objects.exists() or WorkflowJob.objects.exists())
    assert not User.objects.filter(username__startswith="bench-scale").exists()


@pytest.mark.django_db
def test_the_history_is_stored_as_described_and_deleted_by_its_stamp() -> None:
    """Action g is number g // jobs + 1 of job g % jobs + 1, ended within the purge age, with its run, node, try and
    records; 1 in 20 FAILED; running jobs have nothing due; deleting the stamp removes exactly those rows."""
    owner = User.objects.create(username="bench-scale-owner")
    now = timezone.now()
    kept = store_scale_history(owner, jobs=3, actions=2, now=now, log=lambda line: None)
    stored = store_scale_history(owner, jobs=10, actions=95, now=now, log=lambda line: None, chunk=40)
    assert stored.rows == {"jobs": 10, "actions": 95, "workflows": 95, "nodes": 95, "tries": 95, "status_changes": 95,
                           "status_records": 95}
    job = CoordinatorJob.objects.get(pk=stored.job_id(3))
    assert job.status == "RUNNING" and job.last_action_number == 10
    assert job.next_materialize_at is not None and job.next_materialize_at > now + timedelta(days=1)
    assert list(job.actions.order_by("number").values_list("number", flat=True)) == list(range(1, 11))
    assert CoordinatorJob.objects.get(pk=stored.job_id(10)).status == "SUCCEEDED"
    assert CoordinatorJob.objects.get(pk=stored.job_id(5)).status == "KILLED"
    action = CoordinatorAction.objects.get(pk=f"{stored.job_id(8)}@1")  # g = 7
    assert action.status == "FAILED" and action.ended_at is not None and now - timedelta(days=7) < action.ended_at < now
    run = WorkflowJob.objects.get(pk=action.external_id)
    assert run.coord_action_id == action.pk and run.status == "FAILED" and run.nodes.get().status == "ERROR"
    assert TaskTry.objects.get(job_id=run.pk).root_id == stored.job_id(8)
    assert StatusChange.objects.get(object_id=action.pk).to_status == "FAILED"
    assert delete_scale_history(stored.stamp, lambda line: None) == 10 + 95 * 6
    assert CoordinatorJob.objects.count() == 3 and CoordinatorAction.objects.count() == 2  # another stamp's rows stay
    delete_scale_history(kept.stamp, lambda line: None)
    assert not any(model.objects.exists() for model in HISTORY)


@pytest.mark.parametrize(("empty", "big", "ratio", "within"), [
    pytest.param(100.0, 140.0, 1.4, "yes", id="slower-within"),
    pytest.param(100.0, 160.0, 1.6, "NO", id="slower-beyond"),
    pytest.param(100.0, 50.0, 0.5, "yes", id="faster"),
])
def test_the_verdicts(empty: float, big: float, ratio: float, within: str) -> None:
    """A time's cost ratio is big over empty, a rate's empty over big; pages are judged against 300 ms on the big one."""
    table = compare({"page_x_ms": empty, "materialize_actions_per_s": big, "page_x_queries": 7},
                    {"page_x_ms": big, "materialize_actions_per_s": empty, "page_x_queries": 9})
    assert table["page_x_ms"]["ratio"] == ratio and table["page_x_ms"]["within_1_5x"] == within
    assert table["materialize_actions_per_s"]["ratio"] == ratio  # the rate fell as the time rose
    assert table["page_x_ms"]["under_300_ms"] == "yes" and "ratio" not in table["page_x_queries"]


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--trigger-jobs", "-1", "--trigger-jobs must be 0 (the trigger is not timed) or more"),
    ("--history", "0", "--history must be at least 1"),
])
def test_sizes_out_of_range_are_refused_in_one_line(option: str, value: str, said: str) -> None:
    """A negative trigger size (0 leaves the trigger out) or an empty history: a CommandError before anything runs."""
    with pytest.raises(CommandError) as refused:
        call_command("bench", "scale", "--json", option, value)
    assert str(refused.value) == said
