"""Coordinators drive batches (in process): a `batch:<profile>` action opens a batch from its data-in and ends with it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

import batches.services
from batches.choices import BatchStatus as B
from batches.models import Batch
from batches.services import batch_verb, hold_collection, release_collection
from coordinators.batch_launch import BATCH_NODE, CoordBatchSubmitXCommand, worker_of
from coordinators.choices import ActionStatus, JobStatus
from coordinators.launchers import launch_actions
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import control, rerun_job, submit_coordinator
from datasets.timeline import format_datetime
from oozie.definitions import DefinitionError
from statusservice.tasks import input_checks
from tests.batches.tasks import switch
from tests.support.batches import Ingest, settle
from tests.support.processes import WorkerProcess, wait_until
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from workflows.recovery import recover
from xcommands.choices import CommandStatus
from xcommands.queue import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


def minute(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


def prop(name: str, value: str) -> str:
    return f"<property><name>{name}</name><value>{value}</value></property>"


def coordinator(ingest: Ingest, *, app_path: str = "batch:demo", root: Path | None = None, properties: str = "",
                payload: str = "${coord:dataIn('in')}/batch.checkm", run: bool = True) -> CoordinatorJob:
    """One action due now, waiting for `<root>/<yyyyMMddHHmm>/_SUCCESS`, opening a batch of `batch.checkm` in it.

    `run`: its commands run here (start, materialize); else workers run them.
    """
    root = root or ingest.deposit.root / "in"
    xml = f"""<coordinator-app name="ingest" frequency="${{coord:minutes(1)}}" start="{minute(-2)}" end="{minute(-1)}"
        timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <datasets><dataset name="drop" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
        <uri-template>file://{root}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="drop"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      <action><workflow><app-path>{app_path}</app-path><configuration>
        {prop("payload_url", payload)}{properties}
      </configuration></workflow></action>
    </coordinator-app>"""
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job = submit_coordinator(xml, {}, owner=ingest.owner)
    if run:
        settle()
    return job


def arrive(ingest: Ingest, job: CoordinatorJob, objects: int = 2, wrong: frozenset[int] = frozenset(),
           check: bool = True) -> CoordinatorAction:
    """The action's input instance appears with a batch manifest of `objects` objects in it; inputs are checked (`check`)."""
    action = job.actions.get(number=1)
    instance = Path(action.data_in["in"][0].removeprefix("file://"))
    instance.mkdir(parents=True, exist_ok=True)
    manifest = ingest.deposit.objects(objects, wrong=set(wrong), prefix=f"o{action.number}")
    (instance / "batch.checkm").write_text(Path(manifest.removeprefix("file://")).read_text())
    (instance / "_SUCCESS").write_text("")
    if check:
        input_checks()
    return action


def node_of(action: CoordinatorAction) -> WorkflowNode:
    action.refresh_from_db()
    return WorkflowNode.objects.select_related("workflow").get(workflow_id=action.external_id)


def test_an_action_opens_a_batch_of_its_data_in_and_succeeds_when_it_completes(ingest: Ingest) -> None:
    """The batch is opened as the job's owner with the action's properties; the action SUCCEEDED once it completed."""
    job = coordinator(ingest, properties=prop("batch.priority", "3") + prop("batch.what", "${coord:nominalTime()}")
                      + prop("batch.who", "Ann") + prop("batch.submitter", "depositor-7") + prop("batch.mode", "update"))
    action = arrive(ingest, job, objects=2)
    settle()
    action.refresh_from_db()
    batch = Batch.objects.get()
    assert batch.payload_url == f"{action.data_in['in'][0]}/batch.checkm"
    assert (batch.owner, batch.profile.name, batch.type) == (ingest.owner, "demo", "manifest-of-manifests")
    assert (batch.priority, batch.submitter, batch.submission_mode, batch.erc_who) == (3, "depositor-7", "update", "Ann")
    assert batch.erc_what == format_datetime(action.nominal_time)
    assert batch.external_id == f"{action.id}#0" and not batch.trusted
    assert batch.status == B.COMPLETED and batch.jobs.count() == 2
    assert action.status == ActionStatus.SUCCEEDED, action.error_message
    node = node_of(action)
    assert action.external_id.endswith("-W"), "Oozie's externalId: the workflow job"
    assert (node.type, node.worker, node.status, node.lease_expires_at) == (BATCH_NODE, worker_of(batch.pk), NodeStatus.OK, None)
    assert node.workflow.status == WorkflowStatus.SUCCEEDED
    assert CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED


def test_the_action_stays_running_while_its_batch_is_held_and_succeeds_after_release(ingest: Ingest) -> None:
    """Opened batch: action RUNNING whatever the batch waits for; its node holds no lease, so no sweep relaunches it."""
    admin = User.objects.create_superuser("root")
    hold_collection("demo", actor=admin)
    job = coordinator(ingest)
    action = arrive(ingest, job)
    settle()
    action.refresh_from_db()
    assert Batch.objects.get().status == B.HELD
    assert action.status == ActionStatus.RUNNING and action.started_at is not None
    assert recover(timezone.now() + timedelta(days=1)) == {"relaunched": 0, "failed": 0, "resent": 0, "user_retries": 0}
    release_collection("demo", actor=admin)
    settle()
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED and Batch.objects.get().status == B.COMPLETED


def test_a_failed_job_fails_the_batch_and_the_action_with_its_summary(ingest: Ingest) -> None:
    """A batch that ends failed (a bad digest) makes the action FAILED, naming the counts and the failed object."""
    job = coordinator(ingest)
    action = arrive(ingest, job, objects=3, wrong=frozenset({2}))
    settle()
    action.refresh_from_db()
    batch = Batch.objects.get()
    assert batch.status == B.FAILED
    assert action.status == ActionStatus.FAILED
    assert action.error_message.startswith(f"batch {batch.id_text} failed: 2 of 3 object(s) completed, 1 failed; job ")
    assert "o1002" in action.error_message and "digest" in action.error_message
    assert node_of(action).status == NodeStatus.ERROR
    assert CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.FAILED


def test_a_relaunch_of_the_same_run_opens_no_second_batch(ingest: Ingest) -> None:
    """Launching the run again (a recovery) finds the run's batch by its external id; the action follows the one batch."""
    admin = User.objects.create_superuser("root")
    hold_collection("demo", actor=admin)
    job = coordinator(ingest)
    action = arrive(ingest, job)
    settle()
    action.refresh_from_db()
    first = action.external_id
    launch_actions(job, [action], timezone.now())
    action.save(update_fields=["external_id"])
    settle()
    action.refresh_from_db()
    batch = Batch.objects.get()
    assert action.external_id != first and action.status == ActionStatus.RUNNING
    assert node_of(action).worker == worker_of(batch.pk)
    # A duplicate submission of a run that already has its batch is skipped.
    duplicate = enqueue(CoordBatchSubmitXCommand(workflow_id=first, action_id=action.id, run_number=0))
    settle()
    duplicate.refresh_from_db()
    assert duplicate.status == CommandStatus.SKIPPED
    release_collection("demo", actor=admin)
    settle()
    action.refresh_from_db()
    assert Batch.objects.count() == 1 and action.status == ActionStatus.SUCCEEDED
    # A relaunch after the batch ended still opens none: its node ends at once with the batch's outcome.
    launch_actions(job, [action], timezone.now())
    settle()
    assert Batch.objects.count() == 1
    latest = WorkflowJob.objects.filter(coord_action=action).order_by("-created_at", "-id").first()
    assert latest is not None and latest.status == WorkflowStatus.SUCCEEDED


def test_a_rerun_opens_a_new_batch_for_the_new_run(ingest: Ingest) -> None:
    """Each run of an action has its batch (`#0`, `#1`): a rerun after a failed batch opens another, which can succeed."""
    ingest.work.mkdir(parents=True, exist_ok=True)
    switch("fail-processing").touch()
    job = coordinator(ingest)
    action = arrive(ingest, job)
    settle()
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED and "storage unavailable" in action.error_message
    switch("fail-processing").unlink()
    rerun_job(job.id, actor=ingest.owner, rerun_type="action", scope="1")
    settle()
    input_checks()
    settle()
    action.refresh_from_db()
    assert sorted(Batch.objects.values_list("external_id", "status")) == [
        (f"{action.id}#0", B.FAILED), (f"{action.id}#1", B.COMPLETED),
    ]
    assert action.status == ActionStatus.SUCCEEDED and action.run_count == 1


def test_an_unexpected_submission_error_fails_the_action_rather_than_leave_it_waiting(
    ingest: Ingest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A submission that fails for good (not a refusal) is rolled back: the action FAILED naming the error."""
    def broken(**kwargs: object) -> None:
        raise RuntimeError("inventory unreachable")

    monkeypatch.setattr(batches.services, "submit_batch", broken)
    job = coordinator(ingest)
    action = arrive(ingest, job)
    settle()
    action.refresh_from_db()
    assert action.status == ActionStatus.FAILED
    assert action.error_message == "batch not opened: RuntimeError: inventory unreachable", action.error_message
    assert Batch.objects.count() == 0


@pytest.mark.parametrize(
    ("app_path", "extra", "outside", "reason"),
    [
        pytest.param("batch:nope", "", False, "no profile 'nope'", id="unknown-profile"),
        pytest.param("batch:demo", "", True, "outside the payload roots", id="payload-outside-roots"),
        pytest.param("batch:demo", prop("batch.priority", "soon"), False, "batch.priority 'soon' is not a number",
                     id="priority-not-a-number"),
        pytest.param("batch:demo", prop("batch.priority", "100"), False, "priority 100", id="priority-out-of-range"),
        pytest.param("batch:demo", prop("batch.prioirty", "3"), False, "unknown property 'batch.prioirty'",
                     id="misspelt-property"),
        pytest.param("batch:demo", prop("batch.type", "folder"), False, "type 'folder'", id="unknown-type"),
    ],
)
def test_a_refused_submission_fails_the_action_at_once_with_the_reason(
    ingest: Ingest, app_path: str, extra: str, outside: bool, reason: str
) -> None:
    """Nothing is stored; the action FAILED naming why (one command after the input arrived), its node FAILED."""
    root = ingest.deposit.root.parent / "elsewhere" if outside else None
    job = coordinator(ingest, app_path=app_path, root=root, properties=extra)
    action = arrive(ingest, job)
    settle()
    action.refresh_from_db()
    assert Batch.objects.count() == 0
    assert action.status == ActionStatus.FAILED
    assert action.error_message.startswith("batch not opened: ") and reason in action.error_message, action.error_message
    node = node_of(action)
    assert (node.status, node.error_code) == (NodeStatus.FAILED, "E0BATCH")


def test_a_deleted_batch_kills_the_action(ingest: Ingest) -> None:
    """A held batch an admin deletes (confirmed) makes its action KILLED."""
    admin = User.objects.create_superuser("root")
    hold_collection("demo", actor=admin)
    job = coordinator(ingest)
    action = arrive(ingest, job)
    settle()
    batch_verb(Batch.objects.get().pk, "delete", actor=admin, confirmed=True)
    settle()
    action.refresh_from_db()
    assert Batch.objects.get().status == B.DELETED
    assert action.status == ActionStatus.KILLED and node_of(action).status == NodeStatus.KILLED


def test_killing_the_coordinator_leaves_the_batch_to_finish_unheard(ingest: Ingest) -> None:
    """Kill: the action and its run KILLED at once; the batch goes on, and its end changes nothing."""
    admin = User.objects.create_superuser("root")
    hold_collection("demo", actor=admin)
    job = coordinator(ingest)
    action = arrive(ingest, job)
    settle()
    control(job.id, "kill", actor=ingest.owner)
    settle()
    release_collection("demo", actor=admin)
    settle()
    action.refresh_from_db()
    assert Batch.objects.get().status == B.COMPLETED
    assert action.status == ActionStatus.KILLED and node_of(action).status == NodeStatus.KILLED


def test_a_batch_app_path_needs_a_profile(ingest: Ingest) -> None:
    """`batch:` alone is refused at submission, as an unknown launcher is."""
    with pytest.raises(DefinitionError, match="batch:<batch profile>"):
        coordinator(ingest, app_path="batch:")
    assert CoordinatorJob.objects.count() == 0


@pytest.mark.integration
def test_a_coordinator_runs_a_real_batch_to_completion(
    ingest: Ingest, live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess],
) -> None:
    """A real worker, beat and Redis: the input arrives, the action opens its batch, the batch completes, the job SUCCEEDED."""
    ingest.profile.notify_emails = ""  # no SMTP server here
    ingest.profile.save()
    fast = {
        "EXTRA_TASK_MODULES": "examples.tasks,tests.batches.tasks",
        "BATCH_WORK_ROOT": str(ingest.work),
        "BATCH_PAYLOAD_ROOTS": f"file://{ingest.deposit.root}",
        "BATCH_SLOTS": "4",
        "BATCH_DISPATCH_SECONDS": "1",
        "BATCH_RESERVE_BYTES": "0",
        "STATUS_SERVICE_SECONDS": "1",
        "COORD_INPUT_TICK_SECONDS": "1",
        "COORD_INPUT_CHECK_SECONDS": "1",
        "COORD_INPUT_CHECK_MAX_SECONDS": "2",
        "COMMAND_SWEEP_SECONDS": "1",
        "COMMAND_RING_STALE_SECONDS": "2",
    }
    job = coordinator(ingest, run=False)
    live_workers(name="w1", concurrency=4, **fast)
    live_beat(**fast)
    wait_until(lambda: CoordinatorJob.objects.get(pk=job.pk).actions.exists(), 60, "the action to be created")
    action = arrive(ingest, job, objects=3, check=False)
    wait_until(lambda: CoordinatorAction.objects.get(pk=action.pk).status in (ActionStatus.SUCCEEDED, ActionStatus.FAILED),
               120, "the action to end", interval=0.2)
    action.refresh_from_db()
    assert action.status == ActionStatus.SUCCEEDED, action.error_message
    batch = Batch.objects.get()
    assert batch.status == B.COMPLETED and batch.external_id == f"{action.id}#0"
    assert sorted(batch.jobs.values_list("status", flat=True)) == ["completed"] * 3
    assert node_of(action).worker == worker_of(batch.pk)
    wait_until(lambda: CoordinatorJob.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED, 60, "the job to succeed")
