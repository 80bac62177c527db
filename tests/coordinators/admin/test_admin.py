"""The coordinators admin: lists, read-only pages, a paginated timeline, SLA views; bulk actions go through services."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

import coordinators.services as services
from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob, SLAEvent
from coordinators.services import submit_coordinator
from coordinators.sla.service import check
from kernel.admin_kit import CappedCountPaginator
from kernel.permissions import JobPermissionDenied
from tests.coordinators.sla.factories import materialized_job, minute_floor, sla_xml
from tests.support.engine import run_pending_commands
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

JOBS = "/admin/coordinators/coordinatorjob/"
ACTIONS = "/admin/coordinators/coordinatoraction/"


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def job_page(job: CoordinatorJob, suffix: str = "change/") -> str:
    return f"{JOBS}{quote(job.pk)}/{suffix}"


def bulk(client: Client, verb: str, *jobs: CoordinatorJob) -> str:
    response = client.post(
        JOBS, {"action": f"{verb}_jobs", "_selected_action": [j.pk for j in jobs]}, follow=True
    )
    assert response.status_code == 200
    return response.content.decode()


def test_job_list_filters_and_search(operator: Client) -> None:
    """The job list renders with status, owner, app name and date filters, and finds a job by id or app name."""
    job = materialized_job(name="nightly-load")
    other = materialized_job(name="hourly-export")
    page = operator.get(JOBS, {"status__exact": "RUNNING", "q": "nightly"}).content.decode()
    assert job.pk in page and other.pk not in page
    assert operator.get(JOBS, {"q": other.pk}).content.decode().count(other.pk) >= 1
    for query in ({"app_name": "hourly-export"}, {"owner__id__exact": job.owner_id}, {"created_at__gte": "2000-01-01 00:00:00+00:00"}):
        assert operator.get(JOBS, query).status_code == 200


def test_job_page_is_read_only_with_a_summary_of_actions_and_sla(operator: Client) -> None:
    """A job's page shows its actions by status and its SLA, links the timeline, and cannot be saved."""
    job = materialized_job()
    page = operator.get(job_page(job)).content.decode()
    assert "1 action(s)" in page and "WAITING 1" in page
    assert "SLA records" in page and "Timeline" in page
    assert 'name="_save"' not in page
    assert operator.post(job_page(job), {"status": "KILLED"}).status_code == 403
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_timeline_pages_through_many_actions(operator: Client, django_assert_max_num_queries: Any) -> None:
    """Actions by nominal time, 100 a page with their status and SLA; a constant number of queries per page."""
    job = materialized_job()
    first = job.actions.get()
    CoordinatorAction.objects.bulk_create(
        CoordinatorAction(
            id=CoordinatorAction.action_id(job.pk, n), job=job, number=n,
            nominal_time=first.nominal_time + timedelta(minutes=5 * (n - 1)),
            status=ActionStatus.SUCCEEDED if n % 2 else ActionStatus.FAILED,
        )
        for n in range(2, 151)
    )
    with django_assert_max_num_queries(12):
        response = operator.get(job_page(job, "timeline/"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "page 1 of 2 (150 actions)" in page
    assert page.count('<tr class="timeline-row">') == 100
    assert "NOT_STARTED" in page  # the first action's SLA status
    second = operator.get(job_page(job, "timeline/"), {"p": 2}).content.decode()
    assert "page 2 of 2" in second
    failed = operator.get(job_page(job, "timeline/"), {"status": "FAILED", "order": "desc"}).content.decode()
    assert "(75 actions)" in failed and ">150<" in failed


def test_action_list_filters_by_job_and_status(operator: Client) -> None:
    """The action list filters by status and job; an action's page shows its evaluated SLA, read-only."""
    job = materialized_job()
    other = materialized_job(name="other")
    action = job.actions.get()
    page = operator.get(ACTIONS, {"job": job.pk, "status__exact": "WAITING"}).content.decode()
    assert action.pk in page and other.actions.get().pk not in page
    detail = operator.get(f"{ACTIONS}{quote(action.pk)}/change/").content.decode()
    assert "expected-end" in detail and "SLA record" in detail and 'name="_save"' not in detail


def test_action_list_counts_no_further_than_the_cap(operator: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """The list counts at most `cap` actions (millions of ended ones cost no full count); under it, the exact count."""
    monkeypatch.setattr(CappedCountPaginator, "cap", 3)
    job = materialized_job()
    other = materialized_job(name="other")
    CoordinatorAction.objects.bulk_create([
        CoordinatorAction(id=f"{job.pk}@{n}", job=job, number=n, nominal_time=timezone.now(), status="SUCCEEDED")
        for n in range(2, 6)
    ] + [CoordinatorAction(id=f"{other.pk}@2", job=other, number=2, nominal_time=timezone.now(), status="SUCCEEDED")])
    assert "3 coordinator actions" in operator.get(ACTIONS).content.decode()  # 7 stored
    assert "3 coordinator actions" in operator.get(ACTIONS, {"job": job.pk}).content.decode()  # 5 of its own
    assert "2 coordinator actions" in operator.get(ACTIONS, {"job": other.pk}).content.decode()  # under the cap: exact


def test_sla_records_and_events_are_visible_with_filters(operator: Client) -> None:
    """SLA records filter by SLA status and events by type; both detail pages render."""
    job = materialized_job()
    action = job.actions.get()
    check(now=action.nominal_time + timedelta(minutes=11))
    records = operator.get("/admin/coordinators/slaregistration/", {"sla_status__exact": "MISS"}).content.decode()
    assert action.pk in records and "START_MISS,END_MISS" in records
    assert action.pk not in operator.get(
        "/admin/coordinators/slaregistration/", {"sla_status__exact": "MET"}
    ).content.decode()
    events = operator.get("/admin/coordinators/slaevent/", {"event_type__exact": "START_MISS", "job": job.pk})
    assert action.pk in events.content.decode()
    record_page = operator.get(f"/admin/coordinators/slaregistration/{quote(action.pk)}/change/").content.decode()
    assert "END_MISS" in record_page and "expected-start" in record_page
    event = SLAEvent.objects.get(event_type="END_MISS")
    assert operator.get(f"/admin/coordinators/slaevent/{event.pk}/change/").status_code == 200


def test_retry_delivery_queues_undelivered_events(operator: Client) -> None:
    """The SLA event list's action sends undelivered events again at the next run."""
    action = materialized_job().actions.get()
    check(now=action.nominal_time + timedelta(minutes=3))
    event = SLAEvent.objects.get()
    SLAEvent.objects.filter(pk=event.pk).update(notify_status="FAILED", attempts=8, next_attempt_at=None)
    response = operator.post(
        "/admin/coordinators/slaevent/", {"action": "retry_delivery", "_selected_action": [event.pk]}, follow=True
    )
    assert "1 event(s) queued for delivery" in response.content.decode()
    event.refresh_from_db()
    assert (event.notify_status, event.attempts) == ("PENDING", 0)


def test_bulk_suspend_resume_kill_go_through_the_services(operator: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each verb is services.control(job, verb, actor=the operator), per job; the commands then do the work."""
    calls: list[tuple[str, str, str]] = []
    real = services.control

    def spy(job_id: str, verb: str, *, actor: Any) -> CoordinatorJob:
        calls.append((job_id, verb, actor.get_username()))
        return real(job_id, verb, actor=actor)

    monkeypatch.setattr(services, "control", spy)
    first, second = materialized_job(), materialized_job(name="second")
    assert "Suspend queued for 2 job(s)" in bulk(operator, "suspend", first, second)
    run_pending_commands()
    assert set(CoordinatorJob.objects.values_list("status", flat=True)) == {JobStatus.SUSPENDED}
    assert "Resume queued for 1 job(s)" in bulk(operator, "resume", first)
    assert "Kill queued for 1 job(s)" in bulk(operator, "kill", second)
    run_pending_commands()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (JobStatus.RUNNING, JobStatus.KILLED)
    assert [(verb, who) for _, verb, who in calls] == [
        ("suspend", "operator"), ("suspend", "operator"), ("resume", "operator"), ("kill", "operator"),
    ]


def test_refusals_are_reported_per_job_not_raised(operator: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """A verb the status makes a no-op is skipped (reported, as bulk operations do); a permission refusal is a warning naming the job."""
    running, done = materialized_job(), materialized_job(name="done")
    CoordinatorJob.objects.filter(pk=done.pk).update(status=JobStatus.SUCCEEDED)
    page = bulk(operator, "resume", running)
    assert f"skipped for 1 job(s) whose status makes it a no-op: {running.pk} (it is RUNNING)" in page
    assert "refused" not in page
    page = bulk(operator, "kill", running, done)
    assert "Kill queued for 1 job(s)" in page and f"no-op: {done.pk} (it is SUCCEEDED)" in page

    def deny(job_id: str, verb: str, *, actor: Any) -> CoordinatorJob:
        raise JobPermissionDenied(f"user {actor.get_username()!r} may not modify job {job_id}")

    monkeypatch.setattr(services, "control", deny)
    page = bulk(operator, "suspend", running)
    assert f"may not modify job {running.pk}" in page


def test_start_queues_prep_jobs(operator: Client) -> None:
    """Start goes through services.start_job: a PREP job starts, a running one is refused."""
    start = minute_floor(timezone.now())
    prep = submit_coordinator(sla_xml(start, start + timedelta(minutes=5)), {}, owner=User.objects.create_user("p"), start=False)
    running = materialized_job()
    page = bulk(operator, "start", prep, running)
    assert "Start queued for 1 job(s)" in page and f"Start refused for {running.pk}" in page
    run_pending_commands()
    prep.refresh_from_db()
    assert prep.status == JobStatus.RUNNING


def test_staff_without_model_permissions_cannot_see_jobs(client: Client) -> None:
    """Django's admin permissions apply: a staff user without coordinator permissions gets 403."""
    client.force_login(User.objects.create_user("intern", is_staff=True))
    assert client.get(JOBS).status_code == 403


def test_rerun_selected_actions_goes_through_the_service_and_checks_permissions(operator: Client) -> None:
    """The action list's rerun calls rerun_job as the operator; a staff user who may not modify the job is refused."""
    job = materialized_job(actions=2)
    job.actions.update(status=ActionStatus.FAILED)
    form = {"action": "rerun_actions", "_selected_action": list(job.actions.values_list("pk", flat=True))}
    outsider = User.objects.create_user("outsider", is_staff=True)
    outsider.user_permissions.add(*Permission.objects.filter(codename__in=["view_coordinatoraction", "change_coordinatoraction"]))
    browser = Client()
    browser.force_login(outsider)
    before = Command.objects.count()
    page = browser.post(ACTIONS, form, follow=True).content.decode()
    assert f"Rerun refused for {job.pk}" in page and "may not modify" in page
    assert Command.objects.count() == before
    page = operator.post(ACTIONS, form, follow=True).content.decode()
    assert f"Rerun queued for 2 action(s) of {job.pk}" in page
    run_pending_commands()
    assert set(job.actions.values_list("run_count", flat=True)) == {1}
