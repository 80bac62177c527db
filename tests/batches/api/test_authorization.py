"""Who may act on a batch and its jobs, through the native API and the CLI: owner, ACL users and groups, job admins; nobody else."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, Collection
from tests.coordinators.api.factories import api, user
from tests.support.batches import Ingest, batch_with_held_jobs, failed_batch, settle
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass(frozen=True)
class Verb:
    """One verb: its native path and body, its CLI arguments, and what it did once settled."""

    native: str  # "batches/{batch}/update-report/" ...
    body: dict[str, object]
    cli: tuple[str, ...]
    done: Callable[[Batch, BatchJob], bool]


VERBS: dict[str, Verb] = {
    "batch-update-report": Verb("batches/{batch}/update-report/", {}, ("update-report", "{batch}"),
                                lambda batch, job: batch.reports.count() == 2),
    "batch-delete": Verb("batches/{batch}/delete/", {"confirm": True}, ("delete", "--batch", "{batch}", "--yes"),
                         lambda batch, job: batch.status == B.DELETED),
    "job-resume": Verb("batch-jobs/{job}/resume/", {}, ("resume", "{job}"), lambda batch, job: job.retry_count == 1),
    "job-requeue": Verb("batch-jobs/{job}/requeue/", {}, ("requeue", "{job}"),
                        lambda batch, job: job.retry_count == 1 and job.last_successful_status != ""),
    "job-delete": Verb("batch-jobs/{job}/delete/", {}, ("delete", "--job", "{job}"),
                       lambda batch, job: job.status == J.DELETED),
    "job-priority": Verb("batch-jobs/{job}/priority/", {"priority": 3}, ("priority", "{job}", "3"),
                         lambda batch, job: job.priority == 3),
    "job-release": Verb("batch-jobs/{job}/release/", {}, ("release", "--job", "{job}"),
                        lambda batch, job: job.status == J.COMPLETED),
}


def target(ingest: Ingest, verb: str) -> tuple[Batch, BatchJob]:
    """ann's batch with ACL `ops, dave`: failed (its job 2 failed), or for job-release with held jobs (the hold lifted)."""
    if verb == "job-release":
        batch = batch_with_held_jobs(ingest, acl="ops, dave")
        Collection.objects.filter(pk=ingest.collection.pk).update(held=False)
    else:
        batch = failed_batch(ingest, acl="ops, dave")
    return batch, BatchJob.objects.get(batch=batch, number=2)


def act(interface: str, account: User, verb: str, batch: Batch, job: BatchJob) -> tuple[bool, str]:
    """Run the verb as `account`; (accepted, the refusal's message)."""
    spec = VERBS[verb]
    if interface == "native":
        path = spec.native.format(batch=batch.pk, job=job.pk)
        response = api(account).post(f"/api/v1/{path}", spec.body, format="json")
        assert response.status_code in (202, 403), response.content
        return response.status_code == 202, response.content.decode()
    args = [part.format(batch=batch.pk, job=job.pk) for part in spec.cli]
    try:
        call_command("batch", *args, "-user", account.username, stdout=io.StringIO())
    except CommandError as exc:
        assert "\n" not in str(exc)
        return False, str(exc)
    return True, ""


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("interface", ["native", "cli"])
def test_another_user_cannot_act(ingest: Ingest, ann: User, bob: User, interface: str, verb: str) -> None:
    """bob is neither owner, nor in the ACL, nor a job admin: refused naming him (403 / CLI error), nothing queued or changed."""
    batch, job = target(ingest, verb)
    before = (Batch.objects.get(pk=batch.pk).status, BatchJob.objects.get(pk=job.pk).status, job.priority)
    commands = Command.objects.count()
    done, message = act(interface, bob, verb, batch, job)
    assert not done and "'bob' may not" in message
    assert Command.objects.count() == commands
    settle()
    after = (Batch.objects.get(pk=batch.pk).status, BatchJob.objects.get(pk=job.pk).status,
             BatchJob.objects.get(pk=job.pk).priority)
    assert after == before


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("interface", ["native", "cli"])
@pytest.mark.parametrize("who", ["owner", "acl-user", "acl-group", "admin"])
def test_owner_acl_and_admins_may_act(ingest: Ingest, ann: User, carol: User, admin: User, who: str,
                                      interface: str, verb: str) -> None:
    """The owner, a user named in the ACL, a member of a group named there, and a job admin may; the verb takes effect."""
    account = {"owner": lambda: ann, "acl-user": lambda: user("dave"), "acl-group": lambda: carol,
               "admin": lambda: admin}[who]()
    batch, job = target(ingest, verb)
    commands = Command.objects.count()
    done, message = act(interface, account, verb, batch, job)
    assert done, message
    assert Command.objects.count() == commands + 1
    settle()
    assert VERBS[verb].done(Batch.objects.get(pk=batch.pk), BatchJob.objects.get(pk=job.pk))
