"""Oozie clients work unchanged: every status they filter on, Oozie's formats and codes, no-op verbs, paging (ADR 0013).

Requests are shaped as Oozie's clients send them: `filter` strings with `;`-separated pairs (URL
encoded by the client), `len`/`offset` paging, `PUT job/<id>?action=...`, Hadoop XML submissions.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from bundles.choices import BundleStatus as B
from bundles.models import BundleJob
from coordinators.choices import ActionStatus as A
from coordinators.choices import JobStatus as J
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from oozieapi.filters import (
    MAX_PAGE,
    OOZIE_COORD_ACTION_STATUSES,
    OOZIE_JOB_STATUSES,
    OOZIE_WORKFLOW_STATUSES,
)
from oozieapi.ids import is_bundle_id, is_workflow_id, kind_of
from tests.bundles.api.factories import running_bundle
from tests.coordinators.api.factories import api, bulk_actions, bulk_jobs, coordinator_xml, window
from tests.oozieapi.client import Oozie, error_of
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Commands run in process, doorbells go to the private Redis."""


def running_job(owner: User, **kwargs: str) -> CoordinatorJob:
    """A started job with a few actions."""
    job = submit_coordinator(coordinator_xml(**kwargs), window(), owner=owner)
    run_pending_commands()
    return CoordinatorJob.objects.get(pk=job.pk)


def minute(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


# ---- 1. every status value Oozie's clients send ----------------------------------------------


def test_jobs_filter_accepts_every_job_status_of_oozies_enum(ann: User) -> None:
    """Every Job.Status value, in any case, is accepted for coordinators and bundles; one no job has matches nothing."""
    bulk_jobs(ann, 12)
    CoordinatorJob.objects.filter(pk__startswith="000000").update(status=J.SUSPENDED)  # ids 1..9
    stored = dict.fromkeys(OOZIE_JOB_STATUSES, 0) | {"SUSPENDED": 9, "RUNNING": 3}
    oozie = Oozie(ann)
    for status in (*OOZIE_JOB_STATUSES, *OOZIE_WORKFLOW_STATUSES):
        for spelled in (status, status.lower(), status.capitalize()):
            for jobtype in ("coord", "bundle"):
                response = oozie.get("jobs", jobtype=jobtype, filter=f"status={spelled}")
                assert response.status_code == 200, (jobtype, spelled, response.headers.get("oozie-error-message"))
                assert response.json()["total"] == (stored[status] if jobtype == "coord" else 0), (jobtype, spelled)
    both = oozie.get("jobs", jobtype="coord", filter="status=PREMATER;status=SUSPENDED;user=ann").json()
    assert both["total"] == 9 and {j["status"] for j in both["coordinatorjobs"]} == {"SUSPENDED"}


def test_jobs_filter_matches_ignored_jobs_once_they_exist(ann: User) -> None:
    """status=IGNORED matches nothing until a job is IGNORED, then exactly that job (coordinators and bundles)."""
    ids = bulk_jobs(ann, 3)
    oozie = Oozie(ann)
    assert oozie.get("jobs", jobtype="coord", filter="status=IGNORED").json()["total"] == 0
    CoordinatorJob.objects.filter(pk=ids[1]).update(status=J.IGNORED)
    listed = oozie.get("jobs", jobtype="coord", filter="status=ignored").json()
    assert [j["coordJobId"] for j in listed["coordinatorjobs"]] == [ids[1]]
    assert oozie.get("jobs", jobtype="bundle", filter="status=IGNORED").json()["total"] == 0


@pytest.mark.parametrize("jobtype", ["coord", "bundle"])
def test_a_value_that_is_no_status_is_refused_as_oozie_does(ann: User, jobtype: str) -> None:
    """E0420 with Oozie's message (`invalid status [X]`) for a value of no status enum; nothing else is read."""
    oozie = Oozie(ann)
    status, code, message = error_of(oozie.get("jobs", jobtype=jobtype, filter="status=RUNNING;status=NOPE"))
    assert (status, code, message) == (400, "E0420", "E0420: Invalid jobs filter [status=RUNNING;status=NOPE], invalid status [NOPE]")
    for bad in ("status=OK", "status=WAITING", "status=", "status=RUN NING"):  # an action's status is not a job's
        assert error_of(oozie.get("jobs", jobtype=jobtype, filter=bad))[:2] == (400, "E0420"), bad


def test_actions_filter_accepts_every_coordinator_action_status(ann: User) -> None:
    """The filter Oozie's clients send for "unfinished actions" (SUSPENDED included) answers 200; every enum value in any case too."""
    (job_id,) = bulk_jobs(ann, 1)
    bulk_actions(job_id, 30, statuses=("WAITING", "READY", "SUBMITTED", "RUNNING", "SUCCEEDED", "KILLED"))
    oozie = Oozie(ann)
    unfinished = oozie.get(
        f"job/{job_id}", show="info", len=100, filter="status=READY;status=RUNNING;status=SUBMITTED;status=SUSPENDED;status=WAITING",
    )
    assert unfinished.status_code == 200, unfinished.headers.get("oozie-error-message")
    body = unfinished.json()
    assert body["total"] == 20 and {a["status"] for a in body["actions"]} == {"WAITING", "READY", "SUBMITTED", "RUNNING"}
    expected = {status: 5 if status in ("WAITING", "READY", "SUBMITTED", "RUNNING", "SUCCEEDED", "KILLED") else 0
                for status in OOZIE_COORD_ACTION_STATUSES}
    for status, count in expected.items():
        for spelled in (status, status.lower()):
            response = oozie.get(f"job/{job_id}", filter=f"status={spelled}", len=100)
            assert response.status_code == 200 and response.json()["total"] == count, spelled
    assert oozie.get(f"job/{job_id}", filter="status!=SUSPENDED", len=1).json()["total"] == 30
    CoordinatorAction.objects.filter(pk=f"{job_id}@1").update(status=A.IGNORED)
    assert oozie.get(f"job/{job_id}", filter="status=IGNORED").json()["total"] == 1


def test_an_action_filter_value_that_is_no_status_gets_oozies_e0421(ann: User) -> None:
    """E0421 naming the value and listing the valid ones, as CoordinatorEngine.parseJobFilter words it."""
    (job_id,) = bulk_jobs(ann, 1)
    status, code, message = error_of(Oozie(ann).get(f"job/{job_id}", filter="status=RUNNING;status=NOPE"))
    assert (status, code) == (400, "E0421")
    assert message == (
        "E0421: Invalid job filter [status=RUNNING;status=NOPE], invalid status value [NOPE]. Valid status values are: "
        f"[{', '.join(OOZIE_COORD_ACTION_STATUSES)}]"
    )
    for bad in ("status=PREMATER", "status=OK", "status>RUNNING"):
        assert error_of(Oozie(ann).get(f"job/{job_id}", filter=bad))[:2] == (400, "E0421"), bad


def test_coordinator_lists_take_oozies_frequency_filter(ann: User) -> None:
    """frequency=N;unit=... matches as Oozie stores frequencies (hours are minutes, end-of units their unit); bundles refuse it."""
    ids = bulk_jobs(ann, 6)  # frequency 60 MINUTE
    stored = [("1", "HOUR"), ("1", "DAY"), ("1", "END_OF_DAY"), ("1", "MONTH"), ("15", "MINUTE")]
    for job_id, (frequency, unit) in zip(ids[1:], stored, strict=True):
        CoordinatorJob.objects.filter(pk=job_id).update(frequency=frequency, time_unit=unit)
    oozie = Oozie(ann)

    def matched(text: str) -> set[str]:
        response = oozie.get("jobs", jobtype="coord", filter=text)
        assert response.status_code == 200, (text, response.headers.get("oozie-error-message"))
        return {j["coordJobId"] for j in response.json()["coordinatorjobs"]}

    assert matched("frequency=60") == matched("frequency=60;unit=minutes") == matched("frequency=1;unit=HOURS") == {ids[0], ids[1]}
    assert matched("frequency=1;unit=days") == {ids[2], ids[3]}
    assert matched("frequency=1.0;unit=months") == {ids[4]}
    assert matched("frequency=15;user=ann") == {ids[5]}
    assert matched("frequency=2;unit=hours") == set()
    for bad in ("unit=hours", "frequency=often", "frequency=1;unit=weeks"):
        assert error_of(oozie.get("jobs", jobtype="coord", filter=bad))[:2] == (400, "E0420"), bad
    assert error_of(oozie.get("jobs", jobtype="bundle", filter="frequency=60"))[:2] == (400, "E0420")


# ---- 2. Oozie's formats ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frequency", "oozie"),
    [
        pytest.param("${coord:minutes(15)}", ("15", "MINUTE"), id="minutes"),
        pytest.param("30", ("30", "MINUTE"), id="plain-number-is-minutes"),
        pytest.param("${coord:hours(1)}", ("60", "MINUTE"), id="hours-are-minutes"),
        pytest.param("${coord:hours(3)}", ("180", "MINUTE"), id="three-hours"),
        pytest.param("${coord:days(1)}", ("1", "DAY"), id="days"),
        pytest.param("${coord:months(2)}", ("2", "MONTH"), id="months"),
        pytest.param("${coord:endOfDays(1)}", ("1", "DAY"), id="end-of-days"),
        pytest.param("${coord:endOfMonths(1)}", ("1", "MONTH"), id="end-of-months"),
        pytest.param("0/20 * * * *", ("0/20 * * * *", "CRON"), id="cron"),
    ],
)
def test_frequency_and_time_unit_as_oozie_reports_them(ann: User, frequency: str, oozie: tuple[str, str]) -> None:
    """Spec 4.4 / CoordELFunctions: frequencies are minutes unless day or month based; cron stays the expression."""
    job = submit_coordinator(coordinator_xml(frequency=frequency), window(hours=24 * 70), owner=ann)  # a month starts in it
    for path in (f"job/{job.id}", "jobs?jobtype=coord"):
        body = Oozie(ann).get(path).json()
        shown = body if "coordJobId" in body else body["coordinatorjobs"][0]
        assert (shown["frequency"], shown["timeUnit"]) == oozie


def test_bundle_coordinators_show_oozies_frequency(ann: User, tmp_path: Path) -> None:
    """A bundle's coordinators in bundleCoordJobs carry frequency and timeUnit as Oozie's (hours as minutes)."""
    bundle = running_bundle(ann, tmp_path)
    CoordinatorJob.objects.filter(bundle_id=bundle.id).update(frequency="2", time_unit="HOUR")
    info = Oozie(ann).get(f"job/{bundle.id}").json()
    assert info["bundleCoordJobs"] and {(c["frequency"], c["timeUnit"]) for c in info["bundleCoordJobs"]} == {("120", "MINUTE")}


def waiting_job(owner: User) -> CoordinatorJob:
    """One action waiting for two instances with the default flag, one with an empty flag and one coord:latest."""
    dataset = '<dataset name="{0}" frequency="${{coord:minutes(1)}}" initial-instance="2000-01-01T00:00Z" timezone="UTC">' \
              "<uri-template>file:///nonexistent/{0}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template>{1}</dataset>"
    xml = f"""<coordinator-app name="deps" frequency="${{coord:minutes(1)}}" start="{minute(-1)}" end="{minute(0)}"
        timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <datasets>{dataset.format("raw", "")}{dataset.format("dirs", "<done-flag></done-flag>")}</datasets>
      <input-events>
        <data-in name="raw" dataset="raw"><start-instance>${{coord:current(-1)}}</start-instance><end-instance>${{coord:current(0)}}</end-instance></data-in>
        <data-in name="dirs" dataset="dirs"><instance>${{coord:current(0)}}</instance></data-in>
      </input-events>
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    job = submit_coordinator(xml, {}, owner=owner)
    run_pending_commands()
    return job


def test_missing_dependencies_are_hash_separated_uris_with_their_done_flag(ann: User) -> None:
    """missingDependencies is `uri/_SUCCESS#...`, an empty done flag leaving the directory itself, as Oozie stores them."""
    job = waiting_job(ann)
    action = job.actions.get(number=1)
    assert action.status == A.WAITING and len(action.missing_dependencies) == 3
    text = Oozie(ann).get(f"job/{action.id}").json()["missingDependencies"]
    expected = [uri + ("/" + flag if flag else "") for uri, flag in action.missing_dependencies]
    assert text == "#".join(expected)
    parts = text.split("#")
    assert [p.startswith("file:///nonexistent/raw/") and p.endswith("/_SUCCESS") for p in parts] == [True, True, False]
    assert parts[2].startswith("file:///nonexistent/dirs/") and not parts[2].endswith("_SUCCESS")
    listed = Oozie(ann).get(f"job/{job.id}", len=10).json()["actions"]
    assert listed[0]["missingDependencies"] == text and "[" not in text and "'" not in text


def test_unresolved_latest_instances_follow_oozies_separator(ann: User) -> None:
    """coord:latest/future not yet resolved are listed after `!!` (CoordCommandUtils.RESOLVED_UNRESOLVED_SEPARATOR)."""
    (job_id,) = bulk_jobs(ann, 1)
    bulk_actions(job_id, 2, statuses=("WAITING",))
    CoordinatorAction.objects.filter(pk=f"{job_id}@1").update(missing_dependencies=[
        ["s3://bucket/in/2026/01/01", "_DONE"], ["${coord:latest(0)}", "_SUCCESS"], ["${coord:latest(-1)}", "_SUCCESS"],
    ])
    oozie = Oozie(ann)
    assert oozie.get(f"job/{job_id}@1").json()["missingDependencies"] == (
        "s3://bucket/in/2026/01/01/_DONE!!${coord:latest(0)}#${coord:latest(-1)}"
    )
    assert oozie.get(f"job/{job_id}@2").json()["missingDependencies"] is None


# ---- 3. error codes and messages as Oozie's ---------------------------------------------------


def test_change_refusals_name_the_value_as_oozie_does(ann: User) -> None:
    """E1015's first placeholder is the change value; a KILLED job refuses other changes with E1016; nothing queued."""
    job = running_job(ann)
    oozie = Oozie(ann)
    commands = Command.objects.count()
    status, code, message = error_of(oozie.put(f"job/{job.id}", action="change", value="endtime=soon"))
    assert (status, code) == (400, "E1015") and message.startswith("E1015: Invalid coordinator job change value endtime=soon, ")
    assert "soon" in message.split(", ", 1)[1]
    status, code, message = error_of(oozie.put(f"job/{job.id}", action="change", value="status=RUNNING"))
    assert (status, code) == (400, "E1015") and message.startswith("E1015: Invalid coordinator job change value status=RUNNING, ")
    CoordinatorJob.objects.filter(pk=job.id).update(status=J.KILLED)
    assert error_of(oozie.put(f"job/{job.id}", action="change", value="concurrency=2")) == (
        400, "E1016", "E1016: Cannot change a killed coordinator job",
    )
    assert Command.objects.count() == commands


def test_a_declared_parameter_without_value_is_e0738(ann: User, tmp_path: Path) -> None:
    """`<parameters>` with no default and no property: E0738 naming how many and which, as ParameterVerifier does; nothing stored."""
    xml = coordinator_xml().replace(
        'xmlns="uri:oozie:coordinator:0.4">',
        'xmlns="uri:oozie:coordinator:0.4"><parameters><property><name>inputDir</name></property>'
        "<property><name>outputDir</name></property><property><name>queue</name><value>default</value></property></parameters>",
    )
    (tmp_path / "coordinator.xml").write_text(xml)
    status, code, message = error_of(Oozie(ann).submit({"oozie.coord.application.path": str(tmp_path), **window()}))
    assert (status, code, message) == (
        400, "E0738",
        "E0738: The following 2 parameters are required but were not defined and no default values are available: inputDir, outputDir",
    )
    given = Oozie(ann).submit({"oozie.coord.application.path": str(tmp_path), "inputDir": "/in", **window()})
    assert error_of(given)[2].endswith("available: outputDir")
    assert CoordinatorJob.objects.count() == 0 and Command.objects.count() == 0


@pytest.mark.parametrize("action", [None, "start", "dryrun"])
def test_a_missing_application_is_e0504_or_e0505(ann: User, tmp_path: Path, action: str | None) -> None:
    """No such directory: E0504 `App directory [...] does not exist`; a directory without coordinator.xml: E0505 (AuthorizationService)."""
    oozie = Oozie(ann)
    absent = str(tmp_path / "absent")
    assert error_of(oozie.submit({"oozie.coord.application.path": absent, **window()}, action=action)) == (
        400, "E0504", f"E0504: App directory [{absent}] does not exist",
    )
    (tmp_path / "empty").mkdir()
    empty = f"file://{tmp_path / 'empty'}"
    assert error_of(oozie.submit({"oozie.coord.application.path": empty, **window()}, action=action)) == (
        400, "E0505", f"E0505: App definition [{empty}] does not exist",
    )
    assert CoordinatorJob.objects.count() == 0 and Command.objects.count() == 0


@pytest.mark.parametrize("action", [None, "dryrun"])
def test_an_unreadable_application_is_e1001(ann: User, tmp_path: Path, action: str | None) -> None:
    """The definition file exists but is not UTF-8 text: E1001 `Could not read the coordinator job definition, ...`."""
    (tmp_path / "coordinator.xml").write_bytes(b"<coordinator-app \xff\xfe/>")
    status, code, message = error_of(Oozie(ann).submit({"oozie.coord.application.path": str(tmp_path), **window()}, action=action))
    assert (status, code) == (400, "E1001")
    assert message.startswith("E1001: Could not read the coordinator job definition, ") and "not UTF-8" in message
    assert CoordinatorJob.objects.count() == 0 and Command.objects.count() == 0


def test_a_missing_bundle_application_is_e0504_or_e0505(ann: User, tmp_path: Path) -> None:
    """Bundles answer as Oozie's authorizeForApp does for bundle.xml too; nothing stored."""
    oozie = Oozie(ann)
    absent = str(tmp_path / "absent")
    assert error_of(oozie.submit({"oozie.bundle.application.path": absent, **window()}))[:2] == (400, "E0504")
    (tmp_path / "empty").mkdir()
    assert error_of(oozie.submit({"oozie.bundle.application.path": str(tmp_path / "empty"), **window()}))[:2] == (400, "E0505")
    assert BundleJob.objects.count() == 0 and Command.objects.count() == 0


def test_the_native_api_keeps_its_answers_for_these_cases(ann: User, tmp_path: Path) -> None:
    """The native API is unchanged: a missing application or parameter is 400 naming it, a no-op verb 409."""
    client = api(ann)
    response = client.post("/api/v1/coordinator-jobs/", {"app_path": str(tmp_path / "absent"), "properties": window()}, format="json")
    assert response.status_code == 400 and "absent" in str(response.json())
    job = running_job(ann)
    assert client.post(f"/api/v1/coordinator-jobs/{job.id}/resume/").status_code == 409


# ---- 4. no-op verbs answer as Oozie does -------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "verb"),
    [
        pytest.param(J.RUNNING, "resume", id="resume-running"),
        pytest.param(J.PREP, "resume", id="resume-prep"),
        pytest.param(J.KILLED, "suspend", id="suspend-killed"),
        pytest.param(J.SUCCEEDED, "suspend", id="suspend-succeeded"),
        pytest.param(J.IGNORED, "suspend", id="suspend-ignored"),
        pytest.param(J.KILLED, "kill", id="kill-killed"),
        pytest.param(J.DONEWITHERROR, "kill", id="kill-donewitherror"),
        pytest.param(J.KILLED, "resume", id="resume-killed"),
        pytest.param(J.SUSPENDED, "suspend", id="suspend-suspended"),
        pytest.param(J.DONEWITHERROR, "suspend", id="suspend-donewitherror"),
    ],
)
def test_a_verb_oozie_skips_answers_200_and_does_nothing(ann: User, status: str, verb: str) -> None:
    """Oozie's command fails its precondition and the servlet answers 200: same here, no command queued, status kept."""
    job = running_job(ann)
    CoordinatorJob.objects.filter(pk=job.id).update(status=status)
    commands = Command.objects.count()
    response = Oozie(ann).put(f"job/{job.id}", action=verb)
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    assert response.content == b""
    assert Command.objects.count() == commands
    assert CoordinatorJob.objects.get(pk=job.id).status == status


def test_no_op_verbs_still_check_permission_and_other_refusals_stay(ann: User, bob: User) -> None:
    """A caller who may not act gets 403 E0509 even for a no-op; a suspend of a PREPPAUSED job is still E1025; start stays strict."""
    job = running_job(ann)
    assert error_of(Oozie(bob).put(f"job/{job.id}", action="resume"))[:2] == (403, "E0509")
    assert error_of(Oozie(ann).put(f"job/{job.id}", action="start"))[:2] == (400, "E1025")
    CoordinatorJob.objects.filter(pk=job.id).update(status=J.PREPPAUSED)
    assert error_of(Oozie(ann).put(f"job/{job.id}", action="suspend"))[:2] == (400, "E1025")
    assert error_of(Oozie(ann).put("job/0000099-260101000000000-C", action="resume"))[:2] == (400, "E0604")


def test_a_real_suspend_then_resume_twice(ann: User) -> None:
    """The first resume of a suspended job resumes it; a second one, now RUNNING, answers 200 and queues nothing."""
    job = running_job(ann)
    oozie = Oozie(ann)
    assert oozie.put(f"job/{job.id}", action="suspend").status_code == 200
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.id).status == J.SUSPENDED
    assert oozie.put(f"job/{job.id}", action="resume").status_code == 200
    run_pending_commands()
    assert CoordinatorJob.objects.get(pk=job.id).status == J.RUNNING
    commands = Command.objects.count()
    assert oozie.put(f"job/{job.id}", action="resume").status_code == 200
    assert Command.objects.count() == commands


@pytest.mark.parametrize(
    ("status", "verb"),
    [
        pytest.param(B.RUNNING, "resume", id="resume-running"),
        pytest.param(B.RUNNING, "start", id="start-running"),
        pytest.param(B.KILLED, "suspend", id="suspend-killed"),
        pytest.param(B.SUCCEEDED, "kill", id="kill-succeeded"),
        pytest.param(B.KILLED, "kill", id="kill-killed"),
        pytest.param(B.SUSPENDED, "suspend", id="suspend-suspended"),
    ],
)
def test_bundle_verbs_oozie_skips_answer_200(ann: User, bob: User, tmp_path: Path, status: str, verb: str) -> None:
    """BundleStart/Suspend/Resume/KillXCommand skip on their preconditions: 200, nothing queued; others still get 403."""
    bundle = running_bundle(ann, tmp_path)
    BundleJob.objects.filter(pk=bundle.id).update(status=status)
    commands = Command.objects.count()
    response = Oozie(ann).put(f"job/{bundle.id}", action=verb)
    assert response.status_code == 200, response.headers.get("oozie-error-message")
    assert Command.objects.count() == commands and BundleJob.objects.get(pk=bundle.id).status == status
    assert error_of(Oozie(bob).put(f"job/{bundle.id}", action=verb))[0] == 403


def test_bundle_refusals_oozie_would_not_skip_keep_their_codes(ann: User, tmp_path: Path) -> None:
    """A PREPPAUSED bundle cannot be suspended here (Oozie would): E1312 naming its status; nothing queued."""
    bundle = running_bundle(ann, tmp_path)
    BundleJob.objects.filter(pk=bundle.id).update(status=B.PREPPAUSED)
    commands = Command.objects.count()
    assert error_of(Oozie(ann).put(f"job/{bundle.id}", action="suspend")) == (
        400, "E1312", f"E1312: Bundle Job can not be suspended as job finished or failed or killed, id : {bundle.id}, status : PREPPAUSED",
    )
    assert Command.objects.count() == commands


# ---- 5. paging never loses jobs ----------------------------------------------------------------


def test_paging_6000_jobs_by_5000_sees_every_job_once(ann: User) -> None:
    """len=5000 is served (the answer's len says so) and offset=5001 continues: every job exactly once, newest first."""
    ids = bulk_jobs(ann, 6000)
    oozie = Oozie(ann)
    seen: list[str] = []
    offset = 1
    while True:
        page = oozie.get("jobs", jobtype="coord", offset=offset, len=5000).json()
        assert (page["total"], page["offset"], page["len"]) == (6000, offset, 5000)
        seen += [job["coordJobId"] for job in page["coordinatorjobs"]]
        offset += page["len"]
        if offset > page["total"]:
            break
    assert len(seen) == len(set(seen)) == 6000 and set(seen) == set(ids)
    assert seen[0] == ids[-1]
    capped = oozie.get("jobs", jobtype="coord", len=9999).json()
    assert capped["len"] == MAX_PAGE == len(capped["coordinatorjobs"])
    assert oozie.get("jobs", jobtype="coord", len=0).json()["len"] == 50  # Oozie reads len < 1 as 50


def test_a_jobs_actions_page_up_to_5000(ann: User) -> None:
    """show=info&len=5000 answers 5,000 actions and offset=5001 the rest; v1's default stays 1,000."""
    (job_id,) = bulk_jobs(ann, 1)
    bulk_actions(job_id, 5200)
    oozie = Oozie(ann)
    first = oozie.get(f"job/{job_id}", show="info", offset=1, len=5000).json()
    rest = oozie.get(f"job/{job_id}", show="info", offset=5001, len=5000).json()
    numbers = [a["actionNumber"] for a in first["actions"] + rest["actions"]]
    assert first["total"] == 5200 and numbers == list(range(1, 5201))
    assert len(Oozie(ann, version="v1").get(f"job/{job_id}").json()["actions"]) == 1000


@pytest.mark.parametrize(("job_id", "kind"), [
    ("0000001-261127000000000-oozie-B", "bundle"), ("0000002-261127000000000-oozie-C", "coordinator"),
    ("0000002-261127000000000-oozie-C@7", "coordinator"), ("0000003-261127000000000-oozie-W", "workflow"),
    ("0000003-261127000000000-oozie-W@extract", "workflow"), ("0000004-261127000000000-oozie-B@x", "bundle"),
])
def test_one_rule_routes_ids_by_kind(job_id: str, kind: str) -> None:
    """The API, the CLI and secret masking route an id by its suffix before '@', as Oozie does (oozieapi.ids)."""
    assert kind_of(job_id) == kind
    assert is_workflow_id(job_id) == (kind == "workflow")
    assert is_bundle_id(job_id) == (kind == "bundle" and "@" not in job_id)
