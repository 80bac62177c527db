"""Coordinator job and action models: transition tables, derived job status, ids, uniqueness."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from coordinators.choices import (
    ACTION_TRANSITIONS,
    JOB_TRANSITIONS,
    ActionStatus,
    IllegalTransition,
    JobStatus,
    job_status_from_actions,
)
from coordinators.models import CoordinatorAction, CoordinatorJob, next_job_id

A, J = ActionStatus, JobStatus


def test_tables_cover_every_status() -> None:
    """Every status has a row and every target is a status."""
    assert set(JOB_TRANSITIONS) == set(J.values)
    assert set(ACTION_TRANSITIONS) == set(A.values)
    for table, values in ((JOB_TRANSITIONS, set(J.values)), (ACTION_TRANSITIONS, set(A.values))):
        assert all(targets <= values for targets in table.values())


@pytest.mark.parametrize(
    ("current", "target"),
    [
        ("PREP", "PREPSUSPENDED"), ("PREP", "PREPPAUSED"), ("PREP", "RUNNING"), ("PREP", "KILLED"),
        ("RUNNING", "RUNNINGWITHERROR"), ("RUNNING", "SUSPENDED"), ("RUNNING", "PAUSED"), ("RUNNING", "SUCCEEDED"),
        ("RUNNINGWITHERROR", "DONEWITHERROR"), ("RUNNINGWITHERROR", "FAILED"), ("PREPSUSPENDED", "PREP"),
        ("SUSPENDED", "RUNNING"), ("SUSPENDEDWITHERROR", "RUNNINGWITHERROR"), ("PREPPAUSED", "PREP"),
        ("PAUSED", "SUSPENDED"), ("PAUSEDWITHERROR", "RUNNINGWITHERROR"), ("FAILED", "IGNORED"),
        ("KILLED", "IGNORED"), ("IGNORED", "RUNNING"),
        # DG_CommandLineTool: `-change status=RUNNING` revives FAILED and KILLED jobs too.
        ("FAILED", "RUNNING"), ("KILLED", "RUNNING"),
    ],
)
def test_job_transitions_of_the_spec_are_allowed(current: str, target: str) -> None:
    """Spec 6.1.2's transitions are in the table."""
    assert target in JOB_TRANSITIONS[current]


@pytest.mark.parametrize(
    ("current", "target"),
    [("SUCCEEDED", "SUSPENDED"), ("KILLED", "SUSPENDED"), ("PREP", "SUCCEEDED"), ("SUSPENDED", "PAUSED"), ("PREPSUSPENDED", "RUNNING")],
)
def test_illegal_job_transitions_are_refused(current: str, target: str) -> None:
    """transition_to refuses moves the table does not have, naming both statuses."""
    job = CoordinatorJob(id="0000001-x-C", status=current)
    with pytest.raises(IllegalTransition, match=f"from {current} to {target}"):
        job.transition_to(target)
    assert job.status == current


@pytest.mark.parametrize(
    ("current", "target", "allowed"),
    [
        ("WAITING", "READY", True), ("WAITING", "TIMEDOUT", True), ("WAITING", "SKIPPED", True), ("READY", "SUBMITTED", True),
        ("SUBMITTED", "RUNNING", True), ("RUNNING", "SUCCEEDED", True), ("RUNNING", "FAILED", True), ("TIMEDOUT", "IGNORED", True),
        ("IGNORED", "WAITING", True), ("SUCCEEDED", "WAITING", True),
        ("WAITING", "RUNNING", False), ("SUCCEEDED", "FAILED", False), ("SKIPPED", "WAITING", False), ("READY", "TIMEDOUT", False),
    ],
)
def test_action_transitions(current: str, target: str, allowed: bool) -> None:
    """Spec 6.1.3.2's table (plus rerun of SUCCEEDED actions) decides every action move."""
    action = CoordinatorAction(id="j@1", status=current)
    if allowed:
        action.transition_to(target)
        assert action.status == target
    else:
        with pytest.raises(IllegalTransition):
            action.transition_to(target)


@pytest.mark.parametrize(
    ("statuses", "done", "current", "expected"),
    [
        pytest.param(["SUCCEEDED", "SUCCEEDED"], True, "RUNNING", "SUCCEEDED", id="all-succeeded"),
        pytest.param(["FAILED", "FAILED"], True, "RUNNINGWITHERROR", "FAILED", id="all-failed"),
        pytest.param(["KILLED", "KILLED"], True, "RUNNINGWITHERROR", "KILLED", id="all-killed"),
        pytest.param(["SUCCEEDED", "FAILED"], True, "RUNNINGWITHERROR", "DONEWITHERROR", id="mixed"),
        pytest.param(["TIMEDOUT", "TIMEDOUT"], True, "RUNNINGWITHERROR", "DONEWITHERROR", id="all-timedout"),
        pytest.param(["SUCCEEDED", "SKIPPED"], True, "RUNNING", "SUCCEEDED", id="skipped-is-not-an-error"),
        pytest.param(["SUCCEEDED", "RUNNING"], True, "RUNNING", "RUNNING", id="still-running"),
        pytest.param(["FAILED", "WAITING"], False, "RUNNING", "RUNNINGWITHERROR", id="error-while-running"),
        pytest.param(["SUCCEEDED"], False, "RUNNING", "RUNNING", id="more-to-materialize"),
        pytest.param(["SUCCEEDED", "WAITING"], False, "RUNNINGWITHERROR", "RUNNING", id="errors-rerun-back-to-running"),
    ],
)
def test_job_status_from_actions(statuses: list[str], done: bool, current: str, expected: str) -> None:
    """Spec 6.1.2: the job's status follows from its actions once materialization is done."""
    assert job_status_from_actions(statuses, materialization_done=done, current=current) == expected


@pytest.mark.django_db
def test_job_ids_look_like_oozies_and_increase() -> None:
    """Ids are `NNNNNNN-yyMMddHHmmssSSS-C`, increasing."""
    first, second = next_job_id(), next_job_id()
    assert re.fullmatch(r"\d{7}-\d{15}-C", first)
    assert int(second[:7]) == int(first[:7]) + 1
    assert CoordinatorAction.action_id(first, 3) == f"{first}@3"


@pytest.mark.django_db
def test_an_action_number_exists_once_per_job() -> None:
    """(job, number) is unique: a repeated materialization cannot create an action twice."""
    owner = User.objects.create_user("ann")
    now = timezone.now()
    job = CoordinatorJob.objects.create(
        id=next_job_id(), app_name="c", definition="<x/>", owner=owner, frequency="60", time_unit="MINUTE",
        timezone="UTC", start_time=now, end_time=now + timedelta(days=1),
    )
    CoordinatorAction.objects.create(id=CoordinatorAction.action_id(job.id, 1), job=job, number=1, nominal_time=now)
    with pytest.raises(IntegrityError), transaction.atomic():
        CoordinatorAction.objects.create(id=f"{job.id}@dup", job=job, number=1, nominal_time=now)
    assert job.actions.count() == 1
