"""Bulk verbs as operations: one job per selected job, the caller's rights checked per job, failures reported."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from bundles import services
from bundles.models import BundleJob
from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from coordinators.services import submit_coordinator
from operations.bulk import start_bulk
from operations.choices import OperationStatus
from operations.models import Operation
from operations.services import OperationConflict
from tests.bundles.factories import bundle_xml, write_coordinator
from tests.bundles.factories import window as bundle_window
from tests.coordinators.api.factories import coordinator_xml, window
from tests.support.engine import run_all

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


def jobs_of(owner: User, count: int) -> list[str]:
    ids = [submit_coordinator(coordinator_xml(), window(), owner=owner).id for _ in range(count)]
    run_all()
    return ids


def result(operation: Operation) -> dict[str, Any]:
    operation.refresh_from_db()
    assert operation.result is not None
    return dict(operation.result)


def test_bulk_kill_kills_each_job_and_reports_what_it_could_not() -> None:
    """Ann's running jobs are killed; Bob's job fails with the reason; an already killed one is skipped, not failed."""
    ann, bob = User.objects.create_user("ann"), User.objects.create_user("bob")
    mine, theirs = jobs_of(ann, 3), jobs_of(bob, 1)
    CoordinatorJob.objects.filter(pk=mine[2]).update(status=JobStatus.KILLED)
    operation = start_bulk("coordinator", "kill", [*mine, *theirs], user=ann, owner=None, filter_text="name=c")
    assert operation.type == "bulk-kill" and operation.target == "coordinators:*"
    run_all()
    outcome = result(operation)
    assert operation.status == OperationStatus.FAILED
    assert outcome["counts"] == {"SUCCEEDED": 3, "FAILED": 1}
    reasons = {row["partition"]: row["error"] for row in outcome["failed"]}
    assert set(reasons) == {theirs[0]} and "may not modify" in reasons[theirs[0]]
    assert outcome["skipped"] == [{"partition": mine[2], "reason": f"cannot kill coordinator job {mine[2]}: it is KILLED"}]
    assert set(CoordinatorJob.objects.filter(pk__in=mine[:2]).values_list("status", flat=True)) == {JobStatus.KILLED}
    assert CoordinatorJob.objects.get(pk=theirs[0]).status == JobStatus.RUNNING
    assert outcome["result"] == {"verb": "kill", "kind": "coordinator", "filter": "name=c"}


def test_bulk_suspend_then_resume() -> None:
    """Everything selected is suspended, then resumed; the operations succeed."""
    ann = User.objects.create_user("ann")
    ids = jobs_of(ann, 2)
    suspend = start_bulk("coordinator", "suspend", ids, user=ann, owner="ann")
    run_all()
    assert result(suspend)["counts"] == {"SUCCEEDED": 2}
    assert set(CoordinatorJob.objects.values_list("status", flat=True)) == {JobStatus.SUSPENDED}
    resume = start_bulk("coordinator", "resume", ids, user=ann, owner="ann")
    run_all()
    assert resume.target == "coordinators:ann" and result(resume)["counts"] == {"SUCCEEDED": 2}
    assert set(CoordinatorJob.objects.values_list("status", flat=True)) == {JobStatus.RUNNING}


def test_kill_and_resume_on_one_scope_are_incompatible_two_suspends_are_not() -> None:
    """A bulk resume refuses to start beside a running bulk kill on the same scope; suspends share a scope."""
    ann = User.objects.create_user("ann")
    ids = jobs_of(ann, 2)
    kill = start_bulk("coordinator", "kill", ids[:1], user=ann, owner="ann")
    with pytest.raises(OperationConflict, match=f"operation {kill.pk} \\(bulk-kill"):
        start_bulk("coordinator", "resume", ids[1:], user=ann, owner="ann")
    start_bulk("coordinator", "suspend", ids[1:], user=ann, owner="ann")
    start_bulk("coordinator", "suspend", ids[1:], user=ann, owner="ann")
    assert start_bulk("coordinator", "resume", ids[1:], user=ann, owner="bob").target == "coordinators:bob"


def test_bulk_verbs_act_on_bundles_too(tmp_path: Any) -> None:
    """The same operations kill bundles (and, through them, their coordinators)."""
    ann = User.objects.create_user("ann")
    bundle = services.submit_bundle(bundle_xml([("c1", write_coordinator(tmp_path, "c1"))]), bundle_window(), owner=ann)
    run_all()
    operation = start_bulk("bundle", "kill", [bundle.id], user=ann, owner="ann")
    run_all()
    assert result(operation)["counts"] == {"SUCCEEDED": 1}
    assert BundleJob.objects.get(pk=bundle.pk).status == "KILLED"
    assert set(CoordinatorJob.objects.values_list("status", flat=True)) == {JobStatus.KILLED}


def test_nothing_selected_or_an_unknown_verb_is_refused() -> None:
    """A bulk verb needs jobs and a verb it knows."""
    ann = User.objects.create_user("ann")
    with pytest.raises(ValueError, match="selects no job"):
        start_bulk("coordinator", "kill", [], user=ann, owner=None)
    with pytest.raises(ValueError, match="use kill, suspend, resume"):
        start_bulk("coordinator", "explode", ["x"], user=ann, owner=None)
    assert not Operation.objects.exists()


def test_verbs_over_ended_jobs_are_skipped_and_the_operation_succeeds() -> None:
    """The README's `jobs -suspend -filter user=ann` over running and ended jobs: the ended ones are skipped, reported, no failure."""
    ann = User.objects.create_user("ann")
    ids = jobs_of(ann, 3)
    CoordinatorJob.objects.filter(pk=ids[0]).update(status=JobStatus.SUCCEEDED)
    operation = start_bulk("coordinator", "suspend", ids, user=ann, owner="ann", filter_text="user=ann")
    run_all()
    outcome = result(operation)
    assert Operation.objects.get(pk=operation.pk).status == OperationStatus.SUCCEEDED
    assert outcome["failed"] == [] and [row["partition"] for row in outcome["skipped"]] == [ids[0]]
    assert "it is SUCCEEDED" in outcome["skipped"][0]["reason"]
    assert CoordinatorJob.objects.get(pk=ids[0]).status == JobStatus.SUCCEEDED
    assert set(CoordinatorJob.objects.filter(pk__in=ids[1:]).values_list("status", flat=True)) == {JobStatus.SUSPENDED}
