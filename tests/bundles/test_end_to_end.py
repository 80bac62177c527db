"""Bundles end to end: a real worker, beat and Redis; kick-off, verbs, pause, rerun, failed submissions, a dead worker.

Statuses are read from the database while the beat's services (every second here) and the
worker move them; each wait names what never happened. Verbs go through `bundles.services`,
as the CLI and the APIs call them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from bundles import services
from bundles.choices import BundleStatus as B
from bundles.models import BundleAction, BundleJob
from coordinators.choices import ActionStatus
from coordinators.choices import JobStatus as J
from coordinators.models import CoordinatorJob
from tests.bundles.factories import bundle_xml, minute, window, write_coordinator
from tests.support.processes import WorkerProcess, wait_until
from xcommands.models import Command

pytestmark = pytest.mark.integration

FAST = {
    "STATUS_SERVICE_SECONDS": "1",
    "COORD_INPUT_TICK_SECONDS": "1",
    "COORD_INPUT_CHECK_SECONDS": "1",
    "COORD_INPUT_CHECK_MAX_SECONDS": "2",
    "COMMAND_SWEEP_SECONDS": "1",
    "COMMAND_RING_STALE_SECONDS": "2",
    "COORD_MATERIALIZATION_LOOKAHEAD_SECONDS": "0",
}
Start = Callable[..., WorkerProcess]

# Its actions wait for an input nobody writes: the coordinator stays RUNNING, and since WAITING
# actions can be revoked, a pause time of the current minute is accepted by every coordinator.
WAITING_APP = """<coordinator-app name="NAME" frequency="${coord:minutes(1)}" start="${start}" end="${end}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <datasets><dataset name="in" frequency="${coord:minutes(1)}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
    <uri-template>file://ROOT/never/${YEAR}${MONTH}${DAY}${HOUR}${MINUTE}</uri-template></dataset></datasets>
  <input-events><data-in name="in" dataset="in"><instance>${coord:current(0)}</instance></data-in></input-events>
  <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
</coordinator-app>"""


@contextmanager
def fast() -> Iterator[None]:
    """Commands queued by this process are rung again after 2 s, as the workers' own are."""
    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        yield


def prop(name: str, value: str) -> str:
    return f"<property><name>{name}</name><value>{value}</value></property>"


def submit(
    root: Path, apps: dict[str, str], *, owner: User, critical: tuple[str, ...] = (), kick_off: str | None = None,
    start: bool = True, window_minutes: tuple[int, int] = (3, 60), configuration: dict[str, str] | None = None,
) -> BundleJob:
    """A bundle of coordinator apps written under root: `apps` maps each name to a task, or to "waiting"."""
    paths = []
    for name, task in apps.items():
        if task == "waiting":
            text = WAITING_APP.replace("NAME", name).replace("ROOT", str(root))
            paths.append((name, write_coordinator(root, name, text=text)))
        else:
            paths.append((name, write_coordinator(root, name, task=task, configuration=(configuration or {}).get(name, ""))))
    with fast():
        return services.submit_bundle(
            bundle_xml(paths, name=f"b-{root.name[-20:]}", critical=critical, kick_off=kick_off),
            window(*window_minutes), owner=owner, start=start,
        )


@dataclass(frozen=True)
class Seen:
    """A bundle, its coordinators and its actions as read at one moment."""

    status: str
    pending: bool
    coordinators: dict[str, str]  # name -> coordinator job status (only those submitted)
    actions: dict[str, tuple[str, int]]  # name -> (mirrored status, pending verbs)

    def settled(self, status: str, coordinators: str) -> bool:
        """The bundle is `status` with nothing pending; every coordinator `coordinators`, mirrored, acknowledged."""
        return (
            self.status == status and not self.pending and len(self.coordinators) == len(self.actions) > 0
            and set(self.coordinators.values()) == {coordinators}
            and set(self.actions.values()) == {(coordinators, 0)}
        )


def seen(bundle: BundleJob) -> Seen:
    row = BundleJob.objects.get(pk=bundle.pk)
    actions = list(BundleAction.objects.filter(bundle=bundle).select_related("coord_job"))
    return Seen(
        status=row.status, pending=row.pending,
        coordinators={a.coord_name: a.coord_job.status for a in actions if a.coord_job is not None},
        actions={a.coord_name: (a.status, a.pending) for a in actions},
    )


def wait_for(bundle: BundleJob, check: Callable[[Seen], bool], what: str, timeout: float = 30) -> Seen:
    """Wait until check(what is seen) holds; a timeout names what was last seen."""
    try:
        wait_until(lambda: check(seen(bundle)), timeout, what, interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc} (last seen: {seen(bundle)})") from None
    return seen(bundle)


def wait_settled(bundle: BundleJob, status: str, coordinators: str, timeout: float = 30) -> Seen:
    """Wait until the bundle and all its coordinators are settled in these statuses."""
    return wait_for(bundle, lambda now: now.settled(status, coordinators),
                    f"bundle {status} with every coordinator {coordinators}", timeout)


def mirrors_agree(bundle: BundleJob) -> bool:
    """Every submitted coordinator's bundle action says what the coordinator is."""
    return all(
        action.coord_job is not None and action.status == action.coord_job.status
        for action in BundleAction.objects.filter(bundle=bundle, coord_job__isnull=False).select_related("coord_job")
    )


def repairs(bundle: BundleJob) -> int:
    """How many mirrors the status derivations of this bundle found wrong and repaired (ADR 0009: none)."""
    results = Command.objects.filter(key=bundle.id, name="bundles.BundleStatusTransitXCommand", status="SUCCEEDED")
    return sum(int((result or {}).get("repaired", 0)) for result in results.values_list("result", flat=True))


def this_minute_with_time_left(seconds: int = 12) -> str:
    """The current whole minute, after waiting for the next one if fewer than `seconds` are left in it."""
    now = timezone.now()
    if now.second >= 60 - seconds:
        time.sleep(60.5 - now.second - now.microsecond / 1e6)
    return minute(0)


def test_a_kick_off_time_in_the_future_is_waited_for_then_reached(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """Until its kick-off time a bundle is PREP with no coordinator; then every coordinator and the bundle are RUNNING.

    Kick-off times are whole minutes: the bundle is submitted with one minutes away, then its
    row is given one four seconds ahead, so the test does not wait for a minute to turn.
    """
    owner = User.objects.create_user("kick")
    bundle = submit(tmp_path, {"alpha": "waiting", "beta": "waiting", "gamma": "waiting"}, owner=owner,
                    kick_off=minute(5))
    assert bundle.status == B.PREP and not bundle.pending and not Command.objects.exists()
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    kick_off = timezone.now() + timedelta(seconds=4)
    BundleJob.objects.filter(pk=bundle.pk).update(kick_off_time=kick_off)
    while timezone.now() < kick_off - timedelta(seconds=0.3):  # several beats of the kick-off service pass
        assert seen(bundle) == Seen(B.PREP, False, {}, {}), "nothing may start before the kick-off time"
        assert not CoordinatorJob.objects.exists()
        time.sleep(0.2)
    final = wait_settled(bundle, B.RUNNING, J.RUNNING)
    assert sorted(final.coordinators) == ["alpha", "beta", "gamma"]
    started_at = BundleJob.objects.get(pk=bundle.pk).started_at
    assert started_at is not None and started_at >= kick_off
    assert set(CoordinatorJob.objects.values_list("bundle_id", flat=True)) == {bundle.id}


def test_suspend_resume_pause_and_kill_reach_every_coordinator(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """Each verb reaches every coordinator and the bundle follows: SUSPENDED, RUNNING, PAUSED, RUNNING, KILLED.

    The pause time is the current minute, which `-change` accepts (only earlier minutes are in
    the past) and which is due at once; a minute ahead would make the test wait for it.
    """
    owner = User.objects.create_user("verbs")
    bundle = submit(tmp_path, {"alpha": "waiting", "beta": "waiting", "gamma": "waiting"}, owner=owner)
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    wait_settled(bundle, B.RUNNING, J.RUNNING)
    followed = []
    for step, bundle_status, coordinator_status in (
        ("suspend", B.SUSPENDED, J.SUSPENDED),
        ("resume", B.RUNNING, J.RUNNING),
        ("pausetime=this minute", B.PAUSED, J.PAUSED),
        ("pausetime=", B.RUNNING, J.RUNNING),
        ("kill", B.KILLED, J.KILLED),
    ):
        with fast():
            if step.startswith("pausetime="):
                value = f"pausetime={this_minute_with_time_left()}" if step.endswith("this minute") else "pausetime="
                services.change_bundle(bundle.id, value, actor=owner)
            else:
                services.control_bundle(bundle.id, step, actor=owner)
        followed.append(wait_settled(bundle, bundle_status, coordinator_status).status)
        if step == "pausetime=this minute":
            assert set(CoordinatorJob.objects.values_list("pause_time", flat=True)) == {
                BundleJob.objects.get(pk=bundle.pk).pause_time
            }
    assert followed == [B.SUSPENDED, B.RUNNING, B.PAUSED, B.RUNNING, B.KILLED]
    assert not CoordinatorJob.objects.exclude(status=J.KILLED).exists()
    assert repairs(bundle) == 0


def test_rerun_of_one_coordinator_by_name_reruns_only_its_actions(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """A coordinator whose actions failed is rerun by name once fixed: only its actions run again; the bundle SUCCEEDS."""
    needed = tmp_path / "needed.txt"
    owner = User.objects.create_user("rerun")
    bundle = submit(
        tmp_path, {"fixme": "examples.require", "steady": "examples.noop"}, owner=owner, window_minutes=(2, 0),
        configuration={"fixme": prop("path", f"file://{needed}")},
    )
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    wait_for(bundle, lambda now: now.status == B.DONEWITHERROR and not now.pending,
             "the bundle to be DONEWITHERROR (fixme failed, steady succeeded)", 60)
    fixme, steady = CoordinatorJob.objects.get(app_name="fixme"), CoordinatorJob.objects.get(app_name="steady")
    assert steady.status == J.SUCCEEDED and fixme.status in (J.FAILED, J.DONEWITHERROR)
    assert set(fixme.actions.values_list("status", flat=True)) == {ActionStatus.FAILED}
    steady_before = sorted(steady.actions.values_list("number", "status", "ended_at", "run_count"))
    needed.write_text("fixed")
    with fast():
        planned = services.rerun_bundle(bundle.id, actor=owner, coordinators="fixme")
    assert list(planned) == ["fixme"] and sorted(a.number for a in planned["fixme"]) == [1, 2]
    wait_settled(bundle, B.SUCCEEDED, J.SUCCEEDED, timeout=60)
    assert sorted(fixme.actions.values_list("status", "run_count")) == [(ActionStatus.SUCCEEDED, 1)] * 2
    assert sorted(steady.actions.values_list("number", "status", "ended_at", "run_count")) == steady_before
    reruns = Command.objects.filter(name="coordinators.CoordRerunXCommand")
    assert list(reruns.values_list("key", flat=True)) == [fixme.id]


def test_a_coordinator_that_cannot_be_submitted_fails_a_bundle_only_when_critical(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """Critical: the bundle FAILS and its other coordinators are KILLED. Not critical: the bundle RUNS WITH ERROR.

    Submission validates every coordinator, so nothing a user submits fails to submit later;
    an application snapshot damaged in storage (or one a newer version's checks refuse) does.
    The test damages the stored snapshot of one coordinator of each bundle before starting it.
    """
    owner = User.objects.create_user("crit")
    critical = submit(tmp_path / "critical", {"keystone": "examples.noop", "other": "examples.noop"}, owner=owner,
                      critical=("keystone",), start=False)
    lenient = submit(tmp_path / "lenient", {"flaky": "examples.noop", "sturdy": "examples.noop"}, owner=owner,
                     start=False)
    for bundle, broken in ((critical, "keystone"), (lenient, "flaky")):
        applications = dict(bundle.applications)
        applications[broken] = {**applications[broken], "definition": "<coordinator-app"}
        BundleJob.objects.filter(pk=bundle.pk).update(applications=applications)
    live_workers(name="w1", **FAST)
    live_beat(**FAST)
    with fast():
        services.start_bundle(critical.id, actor=owner)
        services.start_bundle(lenient.id, actor=owner)

    wait_for(critical, lambda now: now.status == B.FAILED and not now.pending
             and now.actions == {"keystone": (J.FAILED, 0), "other": (J.KILLED, 0)}
             and set(now.coordinators.values()) <= {J.KILLED}, "the critical bundle to FAIL, the others KILLED")
    wait_for(lenient, lambda now: now.status == B.RUNNINGWITHERROR and not now.pending
             and now.actions == {"flaky": (J.FAILED, 0), "sturdy": (J.RUNNING, 0)}, "the lenient bundle to RUN WITH ERROR")
    for bundle, broken in ((critical, "keystone"), (lenient, "flaky")):
        action = BundleAction.objects.get(bundle=bundle, coord_name=broken)
        assert action.coord_job is None and f"coordinator {broken!r} could not be submitted" in action.error_message
        assert not CoordinatorJob.objects.filter(app_name=broken).exists()
    assert CoordinatorJob.objects.get(app_name="sturdy").status == J.RUNNING
    assert BundleJob.objects.get(pk=critical.pk).ended_at is not None


def test_a_worker_killed_before_a_coordinators_suspension_commits_leaves_nothing_diverged(
    live_workers: Start, live_beat: Start, tmp_path: Path, celery_to_test_redis: str
) -> None:
    """The worker dies inside a coordinator's suspension: neither it nor its bundle action committed; once the
    command's lease expires it runs again, and every coordinator, every bundle action and the bundle say SUSPENDED."""
    marker = tmp_path / "suspend-died"
    owner = User.objects.create_user("crash")
    bundle = submit(tmp_path, {"alpha": "waiting", "beta": "waiting", "gamma": "waiting"}, owner=owner)
    live_workers(
        name="w1", **FAST, COMMAND_LEASE_SECONDS="3",
        XCOMMANDS_FAILPOINTS=f"coordinators.CoordSuspendXCommand:before-commit=exit-once:{marker}",
    )
    live_beat(**FAST)
    wait_settled(bundle, B.RUNNING, J.RUNNING)
    with fast():
        services.control_bundle(bundle.id, "suspend", actor=owner)
    wait_until(marker.exists, 15, "a worker process to die inside a CoordSuspendXCommand")
    assert mirrors_agree(bundle), "a coordinator and its bundle action change in one transaction, or not at all"
    final = wait_settled(bundle, B.SUSPENDED, J.SUSPENDED, timeout=30)
    assert sorted(final.actions) == ["alpha", "beta", "gamma"]
    suspends = list(Command.objects.filter(name="coordinators.CoordSuspendXCommand").values_list("status", "history"))
    assert [status for status, _ in suspends] == ["SUCCEEDED"] * 3
    lost = [history for _, history in suspends if any(entry["outcome"] == "lease expired" for entry in history)]
    assert len(lost) == 1, "exactly one suspension lost its worker and ran again"
    assert repairs(bundle) == 0, "no mirror ever disagreed with its coordinator"
