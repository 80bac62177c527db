"""Submitting bundles (all or nothing, idempotent by external id), dry-run, and the verbs' checks at request time."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from bundles import services
from bundles.choices import BundleStatus as B
from bundles.models import BundleJob
from coordinators.choices import IllegalTransition
from coordinators.choices import JobStatus as J
from coordinators.commands.change import ChangeRefused
from coordinators.commands.rerun import RerunRefused
from coordinators.models import CoordinatorJob
from kernel.permissions import JobPermissionDenied
from oozie.definitions import DefinitionError
from tests.bundles.factories import bundle_xml, minute, window, write_coordinator
from tests.support.bundles import run_actions, settle
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]
Make = Callable[..., BundleJob]


def ann() -> User:
    return User.objects.get_or_create(username="ann")[0]


def nothing_stored() -> bool:
    return not (BundleJob.objects.exists() or CoordinatorJob.objects.exists() or Command.objects.exists())


def test_a_submission_stores_the_bundle_and_the_applications_it_read(tmp_path: Path) -> None:
    """PREP, the XML, the properties after defaults, and each coordinator's application as read at submission."""
    hourly = write_coordinator(tmp_path, "hourly")
    bundle = services.submit_bundle(bundle_xml([("hourly", hourly)]), {**window(), "oozie.job.acl": "ops"},
                                    owner=ann(), start=False)
    assert bundle.id.endswith("-B") and bundle.status == B.PREP and bundle.acl == "ops"
    assert bundle.applications["hourly"]["definition"] == (hourly / "coordinator.xml").read_text()
    assert bundle.applications["hourly"]["app_dir"].endswith("/hourly")
    assert not Command.objects.exists()  # start=False and no kick-off time: it waits for a user START


def test_the_coordinators_run_as_the_bundle_with_the_bundles_acl(make_bundle: Make) -> None:
    """Children are owned by the bundle's owner, carry its ACL and id, and were submitted with the merged configuration."""
    bundle = make_bundle()
    job = CoordinatorJob.objects.get(app_name="hourly")
    assert (job.owner.username, job.bundle_id) == ("ann", bundle.id)
    assert job.configuration["oozie.bundle.id"] == bundle.id and job.configuration["coordName"] == "hourly"
    assert job.configuration["oozie.coord.application.path"].endswith("/hourly")


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        pytest.param("bad-xml", "coordinator 'daily': ", id="malformed-coordinator"),
        pytest.param("unresolved", "coordinator 'daily': ", id="unresolved-variable-in-a-coordinator"),
        pytest.param("missing", "coordinator 'daily': cannot read the coordinator application", id="missing-application"),
        pytest.param("outside", "coordinator 'daily': ", id="outside-the-application-roots"),
    ],
)
def test_one_bad_coordinator_rejects_the_whole_bundle_naming_it(tmp_path: Path, broken: str, message: str, settings: object) -> None:
    """No partial bundle submission: one line naming the coordinator, and nothing stored."""
    hourly = write_coordinator(tmp_path, "hourly")
    daily = write_coordinator(tmp_path, "daily")
    if broken == "bad-xml":
        (daily / "coordinator.xml").write_text("<coordinator-app")
    elif broken == "unresolved":
        (daily / "coordinator.xml").write_text((daily / "coordinator.xml").read_text().replace("${end}", "${nowhere}"))
    elif broken == "missing":
        daily = tmp_path / "absent"
    else:
        settings.COORD_APPLICATION_ROOTS = [f"file://{hourly}"]  # type: ignore[attr-defined]
    with pytest.raises(DefinitionError) as caught:
        services.submit_bundle(bundle_xml([("hourly", hourly), ("daily", daily)]), window(), owner=ann())
    text = str(caught.value)
    assert message in text and "\n" not in text
    assert nothing_stored()


def test_disabled_coordinators_are_neither_read_nor_started(tmp_path: Path, make_bundle: Make) -> None:
    """enabled="false": a broken application is no reason to refuse, and no coordinator is submitted for it."""
    hourly = write_coordinator(tmp_path, "hourly")
    off = tmp_path / "not-there"
    bundle = services.submit_bundle(bundle_xml([("hourly", hourly), ("off", off)], disabled=("off",)), window(), owner=ann())
    settle()
    bundle.refresh_from_db()
    assert list(bundle.actions.values_list("coord_name", flat=True)) == ["hourly"] and bundle.status == B.RUNNING


def test_the_same_external_id_gives_the_same_bundle(tmp_path: Path) -> None:
    """A submission retried after a timeout gets the first bundle back; another user's same id is another bundle."""
    hourly = write_coordinator(tmp_path, "hourly")
    xml = bundle_xml([("hourly", hourly)])
    first = services.submit_bundle(xml, window(), owner=ann(), external_id="nightly-2026-11-23")
    again = services.submit_bundle(xml, {**window(), "oozie.bundle.external.id": "nightly-2026-11-23"}, owner=ann())
    bob = services.submit_bundle(xml, window(), owner=User.objects.create_user("bob"), external_id="nightly-2026-11-23")
    assert again.pk == first.pk and bob.pk != first.pk
    assert BundleJob.objects.count() == 2


def test_a_future_kick_off_time_waits_even_when_run(tmp_path: Path) -> None:
    """run (start=True) with a kick-off time ahead: PREP, nothing queued, until the time or a user START."""
    hourly = write_coordinator(tmp_path, "hourly")
    bundle = services.submit_bundle(bundle_xml([("hourly", hourly)], kick_off=minute(30)), window(), owner=ann())
    assert bundle.status == B.PREP and not bundle.pending and not Command.objects.exists()
    services.start_bundle(bundle.id, actor=ann())
    settle()
    bundle.refresh_from_db()
    assert bundle.status == B.RUNNING


def test_dryrun_shows_each_coordinator_its_configuration_and_first_actions(tmp_path: Path) -> None:
    """Nothing stored; every coordinator with its merged configuration and its first actions (disabled: none)."""
    hourly, daily = write_coordinator(tmp_path, "hourly"), write_coordinator(tmp_path, "daily")
    result = services.dryrun_bundle(
        bundle_xml([("hourly", hourly), ("daily", daily)], disabled=("daily",), critical=("hourly",)),
        window(), owner=ann(), now=timezone.now(), max_actions=2,
    )
    first, second = result["coordinators"]
    assert (first["name"], first["critical"], first["enabled"], len(first["actions"])) == ("hourly", True, True, 2)
    assert first["configuration"]["coordName"] == "hourly" and first["actions"][0]["number"] == 1
    assert (second["name"], second["enabled"], second["actions"]) == ("daily", False, [])
    assert nothing_stored()


def test_verbs_are_checked_when_asked(make_bundle: Make) -> None:
    """Others may not act; a verb the status does not allow is refused at once; nothing is queued either way."""
    bundle = make_bundle()
    stranger = User.objects.create_user("mallory")
    before = Command.objects.count()
    with pytest.raises(JobPermissionDenied):
        services.control_bundle(bundle.id, "suspend", actor=stranger)
    with pytest.raises(IllegalTransition, match="it is RUNNING"):
        services.control_bundle(bundle.id, "resume", actor=ann())
    with pytest.raises(IllegalTransition, match="cannot start"):
        services.start_bundle(bundle.id, actor=ann())
    with pytest.raises(ChangeRefused, match="can only change endtime|pausetime"):
        services.change_bundle(bundle.id, "concurrency=3", actor=ann())
    with pytest.raises(ChangeRefused, match="must not be in the past"):
        services.change_bundle(bundle.id, "pausetime=2020-01-01T00:00Z", actor=ann())
    with pytest.raises(RerunRefused, match="-coordinator"):
        services.rerun_bundle(bundle.id, actor=ann())
    assert Command.objects.count() == before


def test_a_new_end_time_reaches_every_coordinator(make_bundle: Make) -> None:
    """-change endtime on the bundle: each coordinator's end changes (and the bundle keeps it for later ones)."""
    bundle = make_bundle()
    services.change_bundle(bundle.id, f"endtime={minute(30)}", actor=ann())
    settle()
    bundle.refresh_from_db()
    assert bundle.end_time is not None
    assert set(CoordinatorJob.objects.values_list("end_time", flat=True)) == {bundle.end_time}
    assert set(bundle.actions.values_list("pending", flat=True)) == {0}


def test_rerun_by_coordinator_name_reruns_only_its_actions(make_bundle: Make) -> None:
    """-rerun -coordinator daily: daily's finished actions go back to WAITING, hourly's stay; the bundle runs again."""
    bundle = make_bundle(window_minutes=(3, 0))
    run_actions()
    bundle.refresh_from_db()
    assert bundle.status == B.SUCCEEDED
    planned = services.rerun_bundle(bundle.id, actor=ann(), coordinators="daily")
    assert list(planned) == ["daily"] and len(planned["daily"]) == 3
    with pytest.raises(RerunRefused, match="no coordinator 'weekly'"):
        services.rerun_bundle(bundle.id, actor=ann(), coordinators="weekly")
    settle()
    bundle.refresh_from_db()
    daily = CoordinatorJob.objects.get(app_name="daily")
    assert bundle.status == B.RUNNING and daily.status == J.RUNNING
    assert set(daily.actions.values_list("run_count", flat=True)) == {1}
    assert set(CoordinatorJob.objects.get(app_name="hourly").actions.values_list("run_count", flat=True)) == {0}
    run_actions()
    bundle.refresh_from_db()
    assert bundle.status == B.SUCCEEDED


def test_rerun_by_date_reruns_every_coordinators_actions_in_it(make_bundle: Make) -> None:
    """-rerun -date A: each coordinator's action at A (coordinators with none there are passed over)."""
    bundle = make_bundle(window_minutes=(3, 0))
    run_actions()
    planned = services.rerun_bundle(bundle.id, actor=ann(), dates=minute(-2))
    assert sorted(planned) == ["daily", "hourly"] and all(len(actions) == 1 for actions in planned.values())
    with pytest.raises(RerunRefused, match="no finished action"):
        services.rerun_bundle(bundle.id, actor=ann(), dates="2001-01-01T00:00Z")
