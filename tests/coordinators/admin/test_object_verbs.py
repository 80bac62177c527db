"""Buttons on a coordinator job's and action's page: allowed verbs per status, a confirmation, the service, 403s.

The POST goes through `coordinators.services` (the API's and the CLI's path): its status
history names the operator; a staff user who may not act on the job gets a 403 and nothing
is queued.
"""

from __future__ import annotations

from typing import cast

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from lxml import html

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from tests.coordinators.sla.factories import materialized_job
from tests.support.engine import run_pending_commands
from tests.support.users import staff
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

JOBS = "/admin/coordinators/coordinatorjob/"
ACTIONS = "/admin/coordinators/coordinatoraction/"


def buttons(client: Client, url: str) -> dict[str, str]:
    """The verb bar of a page: verb -> '' (enabled) or the reason it is disabled."""
    response = client.get(url)
    assert response.status_code == 200
    document = cast(html.HtmlElement, html.fromstring(response.content))
    bar = document.get_element_by_id("object-verbs")
    return {e.get("data-verb", ""): (e.get("title", "") if "disabled" in e.get("class", "") else "")
            for e in bar.find_class("object-verb")}


def verb_url(job: CoordinatorJob, verb: str) -> str:
    return f"{JOBS}{quote(job.pk)}/verb/{verb}/"


def test_a_running_job_offers_suspend_kill_change_and_rerun_and_disables_the_rest_with_the_reason(
        operator: Client) -> None:
    """RUNNING: suspend, change, rerun and kill; start, resume and ignore disabled, each saying why."""
    job = materialized_job()
    shown = buttons(operator, f"{JOBS}{quote(job.pk)}/change/")
    assert {verb for verb, reason in shown.items() if not reason} == {"suspend", "change", "rerun", "kill"}
    assert "it is RUNNING" in shown["resume"] and "it is RUNNING" in shown["start"]
    assert "only a FAILED or KILLED" in shown["ignore"]


def test_a_suspended_job_offers_resume_not_suspend(operator: Client) -> None:
    """The buttons follow the status."""
    job = materialized_job()
    CoordinatorJob.objects.filter(pk=job.pk).update(status=JobStatus.SUSPENDED)
    shown = buttons(operator, f"{JOBS}{quote(job.pk)}/change/")
    assert shown["resume"] == "" and "it is SUSPENDED" in shown["suspend"]


def test_kill_asks_for_a_confirmation_naming_the_change_then_the_service_kills_and_records_who(
        operator: Client) -> None:
    """GET: the job and RUNNING -> KILLED, a CSRF form; nothing queued. POST confirm: killed, history by the operator."""
    job = materialized_job()
    before = Command.objects.count()
    page = operator.get(verb_url(job, "kill")).content.decode()
    assert f"coordinator job {job.pk} (sla-job): RUNNING -&gt; KILLED" in page
    assert 'name="csrfmiddlewaretoken"' in page and 'name="confirm" value="yes"' in page
    assert Command.objects.count() == before
    response = operator.post(verb_url(job, "kill"), {"confirm": "yes"}, follow=True)
    assert response.redirect_chain[-1][0].endswith(f"{quote(job.pk)}/change/")
    assert f"Kill of coordinator job {job.pk} queued (RUNNING -&gt; KILLED)" in response.content.decode()
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.KILLED
    change = StatusChange.objects.filter(object_id=job.pk, to_status=JobStatus.KILLED).get()
    assert "operator" in change.by


def test_a_post_without_confirm_only_shows_the_confirmation(operator: Client) -> None:
    """Nothing runs until the Confirm button is pressed."""
    job = materialized_job()
    response = operator.post(verb_url(job, "suspend"), {})
    assert response.status_code == 200 and b"RUNNING -&gt; SUSPENDED" in response.content
    run_pending_commands()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_a_user_who_may_not_act_on_the_job_sees_disabled_buttons_and_gets_403_and_nothing_changes() -> None:
    """A staff user with the models' change permissions but neither owner, in the ACL nor a job admin
    (coordinators.change_coordinatorjob would make a job admin): every button disabled with the reason;
    a POST is a 403; no command is queued, the statuses stay."""
    job = materialized_job()
    action = job.actions.get()
    CoordinatorAction.objects.filter(pk=action.pk).update(status=ActionStatus.FAILED)
    helper = staff("helper", "coordinators.view_coordinatorjob", "coordinators.view_coordinatoraction",
                   "coordinators.change_coordinatoraction")
    shown = buttons(helper, f"{ACTIONS}{quote(action.pk)}/change/")
    assert set(shown) == {"rerun", "ignore"}
    assert all("you may not act on coordinator job" in reason for reason in shown.values())
    before = Command.objects.count()
    assert helper.post(f"{ACTIONS}{quote(action.pk)}/verb/ignore/", {"confirm": "yes"}).status_code == 403
    assert helper.post(f"{ACTIONS}{quote(action.pk)}/verb/rerun/", {"confirm": "yes"}).status_code == 403
    assert helper.post(verb_url(job, "kill"), {"confirm": "yes"}).status_code == 403  # no change permission on jobs
    assert Command.objects.count() == before
    run_pending_commands()
    job.refresh_from_db()
    action.refresh_from_db()
    assert (job.status, action.status) == (JobStatus.RUNNING, ActionStatus.FAILED)


def test_change_asks_for_the_value_then_names_old_and_new_then_queues_the_change(operator: Client) -> None:
    """Form, then `concurrency: 1 -> 7`, then the change applied by the command."""
    job = materialized_job()
    asking = operator.get(verb_url(job, "change")).content.decode()
    assert 'name="concurrency"' in asking and "Review" in asking
    review = operator.post(verb_url(job, "change"), {"concurrency": "7"}).content.decode()
    assert f"concurrency: {job.concurrency} -&gt; 7" in review and 'name="confirm"' in review
    bad = operator.post(verb_url(job, "change"), {"endtime": "not a time"})
    assert bad.status_code == 409 and b"verb-error" in bad.content
    operator.post(verb_url(job, "change"), {"concurrency": "7", "confirm": "yes"})
    run_pending_commands()
    job.refresh_from_db()
    assert job.concurrency == 7


def test_an_impossible_verb_is_refused_with_409_and_changes_nothing(operator: Client) -> None:
    """Resume of a RUNNING job: the page says why; no command."""
    job = materialized_job()
    before = Command.objects.count()
    response = operator.post(verb_url(job, "resume"), {"confirm": "yes"})
    assert response.status_code == 409 and b"it is RUNNING" in response.content
    assert Command.objects.count() == before
    assert operator.get(verb_url(job, "nonsense")).status_code == 404


def test_an_action_page_offers_ignore_for_a_failed_action_and_the_service_ignores_it(operator: Client) -> None:
    """FAILED: rerun and ignore enabled; ignore confirmed -> IGNORED with the operator in its history."""
    job = materialized_job()
    action = job.actions.get()
    page = f"{ACTIONS}{quote(action.pk)}/change/"
    assert "only FAILED, KILLED or TIMEDOUT" in buttons(operator, page)["ignore"]
    CoordinatorAction.objects.filter(pk=action.pk).update(status=ActionStatus.FAILED)
    shown = buttons(operator, page)
    assert shown["ignore"] == "" and shown["rerun"] == ""
    confirm = operator.get(f"{ACTIONS}{quote(action.pk)}/verb/ignore/").content.decode()
    assert f"action {action.pk}: FAILED -&gt; IGNORED" in confirm
    operator.post(f"{ACTIONS}{quote(action.pk)}/verb/ignore/", {"confirm": "yes"})
    run_pending_commands()
    action.refresh_from_db()
    assert action.status == ActionStatus.IGNORED
    assert "operator" in StatusChange.objects.get(object_id=action.pk, to_status=ActionStatus.IGNORED).by
