"""POST /api/v1/dataset-events/: producers announce instances; waiting actions wake at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from rest_framework.test import APIClient

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.models import AvailableInstance
from datasets.timeline import format_datetime
from tests.support.engine import run_pending_commands
from xcommands.models import Command

# Commands run in process (the fixture lives with the coordinator runtime tests).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

URL = "/api/v1/dataset-events/"


def minute(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


def waiting_job(owner: User) -> CoordinatorJob:
    """A job whose two past actions wait for /nonexistent inputs with the default _SUCCESS flag."""
    xml = f"""<coordinator-app name="ev" frequency="${{coord:minutes(1)}}" start="{minute(-2)}" end="{minute(0)}"
        timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <datasets><dataset name="d" frequency="${{coord:minutes(1)}}" initial-instance="2000-01-01T00:00Z" timezone="UTC">
        <uri-template>file:///nonexistent/ev/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="d"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    job = submit_coordinator(xml, {}, owner=owner)
    run_pending_commands()
    assert set(job.actions.values_list("status", flat=True)) == {ActionStatus.WAITING}
    return job


def client_for(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_an_announcement_wakes_exactly_the_actions_that_need_it() -> None:
    """The action waiting on the URI is checked at once and becomes READY; the other keeps waiting."""
    owner = User.objects.create_user("prod")
    owner.user_permissions.add(Permission.objects.get(codename="add_availableinstance"))
    owner = User.objects.get(pk=owner.pk)  # drop the permission cache
    job = waiting_job(owner)
    first = job.actions.get(number=1)
    uri = first.missing_dependencies[0][0]
    response = client_for(owner).post(URL, {"uri": uri + "/"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json() == {"uri": uri, "new": True, "actions_woken": 1}
    run_pending_commands()
    statuses = dict(job.actions.values_list("number", "status"))
    assert statuses[1] in (ActionStatus.READY, ActionStatus.SUBMITTED)
    assert statuses[2] == ActionStatus.WAITING
    again = client_for(owner).post(URL, {"uri": uri}, format="json")
    assert again.status_code == 201 and again.json()["new"] is False
    listed = client_for(owner).get(URL, {"uri_prefix": "file:///nonexistent/ev/"})
    assert listed.status_code == 200
    assert [row["announced_by"] for row in listed.json()["results"]] == ["prod"]


@pytest.mark.parametrize(
    ("who", "payload", "status", "message"),
    [
        pytest.param(None, {"uri": "file:///x"}, 403, "credentials", id="anonymous"),
        pytest.param("plain", {"uri": "file:///x"}, 403, "may not announce", id="no-permission"),
        pytest.param("admin", {"uri": "file:///x\nInjected"}, 400, "one line", id="two-lines"),
        pytest.param("admin", {}, 400, "required", id="no-uri"),
    ],
)
def test_refused_announcements_change_nothing(who: str | None, payload: dict[str, str], status: int, message: str) -> None:
    """Anonymous callers, callers without the permission and bad URIs are refused; nothing is stored or queued."""
    users = {"plain": User.objects.create_user("plain"), "admin": User.objects.create_user("adm", is_staff=True, is_superuser=True)}
    response = client_for(users.get(who or "", None)).post(URL, payload, format="json")
    assert response.status_code in ((401, 403) if who is None else (status,))
    assert message in response.content.decode()
    assert AvailableInstance.objects.count() == 0
    assert Command.objects.count() == 0
