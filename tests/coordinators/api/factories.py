"""Small builders for API tests: users with tokens, coordinator XML, jobs and actions in bulk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.models import Group, Permission, User
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from coordinators.models import CoordinatorAction, CoordinatorJob
from datasets.timeline import format_datetime

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def user(name: str, *, staff: bool = False, groups: tuple[str, ...] = ()) -> User:
    """A user with a password `<name>-password-123` and an API token `<name>-token`; staff are job admins here."""
    account = User.objects.create_user(name, password=f"{name}-password-123", is_staff=staff)
    if staff:  # a job admin: the permission operators are given (kernel.permissions.is_admin)
        account.user_permissions.add(Permission.objects.get(codename="change_coordinatorjob"))
    for group in groups:
        account.groups.add(Group.objects.get_or_create(name=group)[0])
    Token.objects.create(user=account, key=f"{name}-token".ljust(40, "0")[:40])
    return account


def token(account: User) -> str:
    """The account's API token."""
    return Token.objects.get(user=account).key


def api(account: User | None) -> APIClient:
    """A client authenticated with the account's token (anonymous for None)."""
    client = APIClient()
    if account is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token(account)}")
    return client


def coordinator_xml(
    *, start: str = "${start}", end: str = "${end}", name: str = "api-test", task: str = "examples.noop",
    frequency: str = "${coord:minutes(1)}", extra: str = "",
) -> str:
    """A minimal runnable coordinator (no inputs) calling a task; start/end default to properties."""
    return f"""<coordinator-app name="{name}" frequency="{frequency}" start="{start}" end="{end}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.4">
      <action><workflow><app-path>task:{task}</app-path>{extra}</workflow></action>
    </coordinator-app>"""


def window(minutes_back: int = 5, hours: int = 1) -> dict[str, str]:
    """start/end properties: a window that began minutes ago (so actions are due at once)."""
    start = (timezone.now() - timedelta(minutes=minutes_back)).replace(second=0, microsecond=0)
    return {"start": format_datetime(start), "end": format_datetime(start + timedelta(hours=hours))}


def bulk_jobs(owner: User, count: int, **fields: Any) -> list[str]:
    """`count` stored jobs (no commands), ids in creation order; for list and paging tests."""
    jobs = [
        CoordinatorJob(
            id=f"{n:07d}-260101000000000-C", app_name=f"job-{n % 97}", definition="<coordinator-app/>",
            owner=owner, frequency="60", time_unit="MINUTE", timezone="UTC",
            start_time=T0 + timedelta(hours=n % 24), end_time=T0 + timedelta(days=30),
            status=fields.get("status", "RUNNING"), acl=fields.get("acl", ""),
        )
        for n in range(1, count + 1)
    ]
    CoordinatorJob.objects.bulk_create(jobs, batch_size=2000)
    return [job.id for job in jobs]


def bulk_actions(job_id: str, count: int, statuses: tuple[str, ...] = ("SUCCEEDED",)) -> None:
    """`count` actions of a job, numbered 1..count, an hour apart, statuses cycling."""
    CoordinatorAction.objects.bulk_create(
        [
            CoordinatorAction(
                id=CoordinatorAction.action_id(job_id, n), job_id=job_id, number=n,
                nominal_time=T0 + timedelta(hours=n), status=statuses[n % len(statuses)],
            )
            for n in range(1, count + 1)
        ],
        batch_size=5000,
    )
