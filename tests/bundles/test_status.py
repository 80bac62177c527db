"""The bundle's status from its coordinators (derive_status), and the mirror kept in the coordinator's transaction."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, connections, transaction

from bundles.choices import BundleStatus as B
from bundles.commands.lifecycle import BundleStatusTransitXCommand
from bundles.models import BundleAction, BundleJob
from bundles.status import derive_status
from coordinators.choices import JobStatus as J
from tests.support.bundles import settle


@pytest.mark.parametrize(
    ("current", "children", "pending", "expected"),
    [
        pytest.param(B.RUNNING, [J.RUNNING, J.RUNNING], False, B.RUNNING, id="all-running"),
        pytest.param(B.RUNNING, [J.RUNNING, J.RUNNINGWITHERROR], False, B.RUNNINGWITHERROR, id="a-child-with-error"),
        pytest.param(B.RUNNING, [J.RUNNING, J.FAILED], False, B.RUNNINGWITHERROR, id="a-child-failed"),
        pytest.param(B.RUNNINGWITHERROR, [J.RUNNING, J.RUNNING], False, B.RUNNING, id="errors-rerun-away"),
        pytest.param(B.RUNNING, [J.SUCCEEDED, J.SUCCEEDED], False, B.SUCCEEDED, id="all-succeeded"),
        pytest.param(B.RUNNING, [J.SUCCEEDED, J.SUCCEEDED], True, B.RUNNING, id="ended-but-a-verb-pending"),
        pytest.param(B.RUNNING, [J.KILLED, J.KILLED], False, B.KILLED, id="all-killed"),
        pytest.param(B.RUNNING, [J.FAILED, J.FAILED], False, B.FAILED, id="all-failed"),
        pytest.param(B.RUNNINGWITHERROR, [J.SUCCEEDED, J.FAILED], False, B.DONEWITHERROR, id="mixed-ends"),
        pytest.param(B.RUNNING, [J.SUCCEEDED, J.DONEWITHERROR], False, B.DONEWITHERROR, id="a-child-done-with-error"),
        pytest.param(B.RUNNING, [J.SUCCEEDED, J.IGNORED], False, B.SUCCEEDED, id="ignored-children-do-not-count"),
        pytest.param(B.SUSPENDED, [J.SUSPENDED, J.RUNNING], True, B.SUSPENDED, id="suspended-stays"),
        pytest.param(B.SUSPENDED, [J.SUSPENDED, J.FAILED], False, B.SUSPENDEDWITHERROR, id="suspended-with-error"),
        pytest.param(B.PAUSED, [J.RUNNING, J.RUNNING], False, B.PAUSED, id="paused-stays"),
        pytest.param(B.PAUSED, [J.PAUSED, J.KILLED], False, B.PAUSEDWITHERROR, id="paused-with-error"),
        pytest.param(B.RUNNING, [J.PAUSED, J.PAUSED], False, B.PAUSED, id="bottom-up-paused"),
        pytest.param(B.RUNNING, [J.PAUSED, J.PAUSEDWITHERROR], False, B.PAUSEDWITHERROR, id="bottom-up-paused-with-error"),
        pytest.param(B.RUNNING, [J.PAUSED, J.PAUSED], True, B.RUNNING, id="pause-reset-pending-not-paused-again"),
        pytest.param(B.RUNNING, [J.SUSPENDED, J.SUCCEEDED], False, B.SUSPENDED, id="bottom-up-suspended"),
        pytest.param(B.RUNNING, [J.SUSPENDED, J.FAILED], False, B.SUSPENDEDWITHERROR, id="bottom-up-suspended-with-error"),
        pytest.param(B.RUNNING, [J.SUSPENDED, J.RUNNING], False, B.RUNNING, id="one-suspended-one-running"),
        pytest.param(B.KILLED, [J.RUNNING], True, None, id="killed-is-final"),
        pytest.param(B.FAILED, [J.SUCCEEDED], False, None, id="failed-is-final"),
        pytest.param(B.PREP, [], False, None, id="prep-has-no-children"),
    ],
)
def test_the_bundle_status_follows_its_coordinators(current: str, children: list[str], pending: bool, expected: str | None) -> None:
    """Oozie's BundleStatusTransit rules, case by case."""
    assert derive_status(current, children, pending=pending) == expected


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_the_mirror_changes_with_the_coordinator_or_not_at_all(make_bundle: Callable[..., BundleJob]) -> None:
    """A coordinator's status change and its bundle action's commit together: a rollback undoes both."""
    bundle = make_bundle()
    action = bundle.actions.select_related("coord_job").get(coord_name="hourly")
    job = action.coord_job
    assert job is not None
    with pytest.raises(RuntimeError), transaction.atomic():
        job.transition_to(J.SUSPENDED)
        job.save(update_fields=["status"])
        assert BundleAction.objects.get(pk=action.pk).status == J.SUSPENDED  # seen inside the transaction
        raise RuntimeError("the worker dies before the commit")
    assert BundleAction.objects.get(pk=action.pk).status == J.RUNNING
    job.refresh_from_db()
    job.transition_to(J.SUSPENDED)
    job.save(update_fields=["status"])
    mirrored = BundleAction.objects.get(pk=action.pk)
    assert (mirrored.status, mirrored.dirty) == (J.SUSPENDED, True)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_a_mirror_that_disagrees_is_repaired_by_the_status_service(make_bundle: Callable[..., BundleJob]) -> None:
    """Should a bundle action ever disagree with its coordinator, the status service notices and repairs it."""
    bundle = make_bundle()
    BundleAction.objects.filter(bundle=bundle).update(status=J.SUSPENDED, dirty=False)  # written behind our back
    settle()
    assert set(BundleAction.objects.filter(bundle=bundle).values_list("status", "dirty")) == {(J.RUNNING, False)}
    bundle.refresh_from_db()
    assert bundle.status == B.RUNNING


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_the_status_transit_waits_for_a_mirror_in_flight_and_reads_the_coordinator_it_committed(
    make_bundle: Callable[..., BundleJob],
) -> None:
    """A transit that waits for a coordinator's transaction reads that coordinator's new status, not its old one.

    CI once saw it: a kill committed while the transit waited on the action's lock; PostgreSQL
    re-read the action (KILLED) but kept the coordinator row of its first snapshot (RUNNING), and
    the transit "repaired" the fresh mirror back to RUNNING. Only PostgreSQL lets both transactions
    run at once (SQLite has one writer).
    """
    if connection.vendor != "postgresql":
        pytest.skip("needs two concurrent writers (PostgreSQL)")
    bundle = make_bundle()
    action = bundle.actions.select_related("coord_job").get(coord_name="hourly")
    job = action.coord_job
    assert job is not None and job.status == J.RUNNING
    mirrored, release = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}

    def kill_the_coordinator() -> None:
        try:
            with transaction.atomic():
                held = type(job).objects.select_for_update().get(pk=job.pk)
                held.transition_to(J.KILLED)
                held.save(update_fields=["status"])  # the mirror: the action row is now locked here
                mirrored.set()
                release.wait(30)
        finally:
            connections.close_all()

    def transit() -> None:
        try:
            with transaction.atomic():
                outcome["result"] = BundleStatusTransitXCommand(bundle_id=bundle.id).run()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = exc
        finally:
            connections.close_all()

    killer = threading.Thread(target=kill_the_coordinator)
    killer.start()
    assert mirrored.wait(30)
    deriver = threading.Thread(target=transit)
    deriver.start()
    # The transit is waiting for the action row the kill holds (a lock wait in pg_stat_activity).
    deadline = time.monotonic() + 30
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the transit never waited for the action row")
    release.set()
    killer.join(30)
    deriver.join(30)
    assert "error" not in outcome, outcome
    assert outcome["result"]["repaired"] == 0
    assert BundleAction.objects.get(pk=action.pk).status == J.KILLED
