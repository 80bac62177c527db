"""Keyed-job REST API and the operator admin for command queues."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from rest_framework.test import APIClient

from project.celery import app
from tests.support.celery_app import point_celery_at
from xcommands import engine
from xcommands.choices import CommandStatus
from xcommands.models import Command
from xcommands.queue import enqueue

from .commands import TraceXCommand

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _redis(redis_url: str) -> Iterator[None]:
    old = (app.conf.broker_url, app.conf.result_backend)
    point_celery_at(app, redis_url, redis_url)
    with override_settings(REDIS_URL=redis_url):
        yield
    point_celery_at(app, *old)


@pytest.fixture
def ann() -> User:
    return User.objects.create_user("ann", password="ann-password-123")


@pytest.fixture
def bob() -> User:
    return User.objects.create_user("bob", password="bob-password-123")


def api(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_anonymous_callers_cannot_queue_jobs() -> None:
    """POST /api/v1/keyed-jobs/ needs authentication and writes nothing without it."""
    response = api(None).post("/api/v1/keyed-jobs/", {"key": "k", "task_name": "actions.tests.append"}, format="json")
    assert response.status_code in (401, 403)
    assert Command.objects.count() == 0


def test_queue_a_keyed_job_and_read_its_status(ann: User) -> None:
    """An authenticated user queues a task under a key and reads status, attempts and errors."""
    response = api(ann).post(
        "/api/v1/keyed-jobs/",
        {"key": "acct-9", "task_name": "actions.tests.append", "kwargs": {"key": "acct-9", "label": "x"}, "max_retries": 2},
        format="json",
    )
    assert response.status_code == 201, response.content
    job = response.json()
    assert (job["key"], job["task_name"], job["status"], job["attempts"], job["max_retries"]) == (
        "acct-9", "actions.tests.append", "PENDING", 0, 2,
    )
    assert engine.process(job["id"]) == "succeeded"
    detail = api(ann).get(f"/api/v1/keyed-jobs/{job['id']}/").json()
    assert (detail["status"], detail["attempts"], detail["result"]) == ("SUCCEEDED", 1, "x")
    assert detail["history"][-1]["outcome"] == "SUCCEEDED"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param({"key": "k", "task_name": "project.healthcheck"}, "internal to the service", id="internal-task"),
        pytest.param({"key": "k", "task_name": "other.task"}, "not allowed", id="task-not-allowed"),
        pytest.param({"key": "k", "task_name": "actions.nope"}, "no Celery task", id="unknown-task"),
        pytest.param({"key": "k", "task_name": "xcommands.KeyedJobXCommand"}, "internal to the service", id="command-task"),
        pytest.param({"key": "", "task_name": "actions.tests.append"}, "key", id="empty-key"),
        pytest.param({"key": "k", "task_name": "actions.tests.append", "max_retries": -1}, "max_retries", id="negative-retries"),
        pytest.param(
            {"key": "k", "task_name": "actions.tests.append", "rollback_task": "os.system"}, "not allowed", id="bad-rollback"
        ),
    ],
)
def test_bad_keyed_jobs_are_refused_with_a_reason(ann: User, body: dict[str, object], message: str) -> None:
    """Bad submissions answer 400 naming the problem, and write nothing."""
    response = api(ann).post("/api/v1/keyed-jobs/", body, format="json")
    assert response.status_code == 400
    assert message in response.content.decode()
    assert Command.objects.count() == 0


def test_users_see_only_their_own_jobs(ann: User, bob: User) -> None:
    """Another user's job is a 404 and absent from the list; staff see everything."""
    job = api(ann).post(
        "/api/v1/keyed-jobs/", {"key": "k", "task_name": "actions.tests.append", "kwargs": {"key": "k", "label": "a"}}, format="json"
    ).json()
    assert api(bob).get(f"/api/v1/keyed-jobs/{job['id']}/").status_code == 404
    assert api(bob).get("/api/v1/keyed-jobs/").json()["results"] == []
    assert api(ann).get("/api/v1/keyed-jobs/?key=k").json()["count"] == 1
    bob.is_staff = True
    bob.save()
    assert api(bob).get(f"/api/v1/keyed-jobs/{job['id']}/").status_code == 200
    assert api(ann).get("/api/v1/keyed-jobs/999999/").status_code == 404


def test_admin_shows_queues_and_unblocks_a_parked_key(client: Client) -> None:
    """The queue list shows depth, head and parked commands; the skip action unblocks the key."""
    admin_user = User.objects.create_superuser("root", password="root-password-123")
    client.force_login(admin_user)
    parked = enqueue(TraceXCommand(key="blocked", label="p", fail_times=1, fail_kind="permanent", rollback_fails=True))
    behind = enqueue(TraceXCommand(key="blocked", label="b"))
    enqueue(TraceXCommand(key="busy", label="q1"))
    assert engine.process(parked.pk) == "parked"
    page = client.get("/admin/xcommands/commandkey/")
    assert page.status_code == 200
    queues = {queue.key: queue for queue in page.context["cl"].result_list}
    blocked = queues["blocked"]
    assert (blocked.depth, blocked.parked, blocked.head_id) == (2, 1, parked.pk)  # type: ignore[attr-defined]
    assert blocked.oldest == parked.enqueued_at  # type: ignore[attr-defined]
    assert (queues["busy"].depth, queues["busy"].parked) == (1, 0)  # type: ignore[attr-defined]
    assert "0h 0m" in page.content.decode()  # oldest waiting age
    text = page.content.decode()
    assert '">blocked</a></th>' in text and '">busy</a></th>' in text
    assert f"#{parked.pk} tests.TraceXCommand</a> (PARKED)" in text
    blocked_only = client.get("/admin/xcommands/commandkey/?state=blocked").content.decode()
    assert '">busy</a></th>' not in blocked_only and '">blocked</a></th>' in blocked_only
    history = client.get("/admin/xcommands/command/?q=blocked")
    assert history.status_code == 200 and "tests.TraceXCommand" in history.content.decode()
    detail = client.get(f"/admin/xcommands/command/{parked.pk}/change/")
    assert detail.status_code == 200 and "double fault" in detail.content.decode()
    response = client.post(
        "/admin/xcommands/command/",
        {"action": "skip_parked", "_selected_action": [parked.pk]},
        follow=True,
    )
    assert response.status_code == 200
    parked.refresh_from_db()
    assert parked.status == CommandStatus.CANCELLED
    assert engine.process(behind.pk) == "succeeded"


def test_admin_retry_refuses_commands_that_are_not_parked(client: Client) -> None:
    """Retrying a command that is not parked changes nothing and says why."""
    client.force_login(User.objects.create_superuser("root", password="root-password-123"))
    row = enqueue(TraceXCommand(key="k", label="fine"))
    response = client.post(
        "/admin/xcommands/command/", {"action": "retry_parked", "_selected_action": [row.pk]}, follow=True
    )
    assert "only a PARKED command can be retried" in response.content.decode()
    row.refresh_from_db()
    assert row.status == CommandStatus.PENDING
