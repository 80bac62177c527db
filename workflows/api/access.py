"""Who may read and act on a workflow job: its parent coordinator job's rules; unparented: its owner and admins.

A sub-workflow answers to the workflow at the top of its chain. The Oozie API, the native API,
the CLI and the admin all ask here, so a check cannot differ between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from kernel.permissions import OwnedJob, check_modify, check_read, readable_jobs
from workflows.models import WorkflowJob

MAX_PARENT_DEPTH = 50  # sub-workflows nest at most 20 deep (workflows.engine); a bound against a corrupt chain


@dataclass(frozen=True)
class Unparented:
    """A workflow without a parent action answers to its owner (and admins) only."""

    id: str
    owner_id: Any
    acl: str = ""
    kind_name: str = "workflow job"


def root_of(workflow: WorkflowJob) -> WorkflowJob:
    """The workflow at the top of a sub-workflow chain (itself when it has no parent workflow)."""
    root = workflow
    for _ in range(MAX_PARENT_DEPTH):
        if not root.parent_workflow_id:
            break
        root = WorkflowJob.objects.only("id", "owner_id", "coord_action_id", "parent_workflow_id").get(
            pk=root.parent_workflow_id)
    return root


@dataclass(frozen=True)
class ParentJob:
    """The coordinator job a run answers to, as much of it as permissions read (through the run's action)."""

    id: str
    owner_id: Any
    acl: str
    kind_name: str = "job"  # as refusals named the coordinator job before


def guard(workflow: WorkflowJob) -> OwnedJob:
    """What permissions are checked against: the root's parent coordinator job, else the root workflow itself."""
    root = root_of(workflow)
    if root.coord_action_id:
        job_id, owner_id, acl = WorkflowJob.objects.filter(pk=root.pk).values_list(
            "coord_action__job_id", "coord_action__job__owner_id", "coord_action__job__acl").get()
        return ParentJob(job_id, owner_id, acl or "")
    return Unparented(root.id, root.owner_id)


def may_read(user: Any, workflow: WorkflowJob) -> None:
    """JobPermissionDenied unless the user may read the workflow."""
    check_read(user, guard(workflow))


def may_modify(user: Any, workflow: WorkflowJob) -> None:
    """JobPermissionDenied unless the user may kill, suspend, resume, start or rerun the workflow."""
    check_modify(user, guard(workflow))


def readable_workflows(queryset: QuerySet[WorkflowJob], user: Any) -> QuerySet[WorkflowJob]:
    """The workflows whose parent coordinator job the caller may read (unparented ones: their owner's).

    Sub-workflows carry their parent's owner, so the owner rule covers them too.
    """
    readable = readable_jobs(queryset, user, prefix="coord_action__job__")
    if readable is queryset:  # reads are not restricted, or the caller is an admin
        return queryset
    return queryset.filter(Q(pk__in=readable.values("pk")) | Q(coord_action__isnull=True, owner_id=user.pk))
