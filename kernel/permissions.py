"""Who may read and who may change a job: owner, `oozie.job.acl` users and groups, admins.

One place decides, and every interface (REST APIs, CLI, admin) asks it through the domain
actions in `coordinators.services`, so a check cannot be forgotten in one of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from django.conf import settings
from django.db.models import Q, QuerySet

from oozie.properties import USER_NAME, expand_properties


class JobPermissionDenied(PermissionError):  # noqa: N818 - reads as the condition
    """The caller may not act on this job (403 in the APIs, one line in the CLI)."""


class OwnedJob(Protocol):
    """Anything with an id, an owner and an Oozie ACL string (coordinator jobs, bundles, batches and their jobs)."""

    @property
    def id(self) -> Any: ...  # noqa: D102

    @property
    def acl(self) -> str: ...  # noqa: D102

    @property
    def owner_id(self) -> Any: ...  # noqa: D102


def acl_names(acl: str) -> set[str]:
    """The names in an `oozie.job.acl` value: comma (or space) separated users and groups."""
    return {name.strip() for name in acl.replace(" ", ",").split(",") if name.strip()}


ADMIN_PERMISSION = "coordinators.change_coordinatorjob"


def is_admin(user: Any) -> bool:
    """Job admins may act on every job: superusers, and users granted coordinators.change_coordinatorjob.

    Being staff alone (admin site access) is not enough: operators get the permission,
    usually through a group, so a view-only staff account stays view-only everywhere.
    """
    if not getattr(user, "is_active", False):
        return False
    return bool(user.is_superuser or user.has_perm(ADMIN_PERMISSION))


def can_modify(user: Any, job: OwnedJob) -> bool:
    """The owner, an admin, or a user named in the job's ACL (directly or by one of their groups)."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if job.owner_id == user.pk or is_admin(user):  # the owner first: an admin's check reads its permissions
        return True
    names = acl_names(job.acl)
    if not names:
        return False
    if user.get_username() in names:
        return True
    return bool(user.groups.filter(name__in=names).exists())


def can_read(user: Any, job: OwnedJob) -> bool:
    """Everybody authenticated may read, unless COORD_RESTRICT_READS limits reads to modifiers."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if not settings.COORD_RESTRICT_READS:
        return True
    return can_modify(user, job)


def check_modify(user: Any, job: OwnedJob) -> None:
    """Raise JobPermissionDenied unless the user may change the job."""
    if not can_modify(user, job):
        name = user.get_username() if user is not None and hasattr(user, "get_username") else "anonymous"
        raise JobPermissionDenied(f"user {name!r} may not modify {getattr(job, 'kind_name', 'job')} {job.id}")


def check_read(user: Any, job: OwnedJob) -> None:
    """Raise JobPermissionDenied unless the user may read the job."""
    if not can_read(user, job):
        name = user.get_username() if user is not None and hasattr(user, "get_username") else "anonymous"
        raise JobPermissionDenied(f"user {name!r} may not read {getattr(job, 'kind_name', 'job')} {job.id}")


def _acl_pattern(name: str) -> str:
    """Matches a name as one entry of an `oozie.job.acl` value (comma or space separated)."""
    return rf"(^|[ ,]){re.escape(name)}([ ,]|$)"


def readable_jobs(queryset: QuerySet[Any], user: Any, prefix: str = "") -> QuerySet[Any]:
    """The jobs the caller may read: all, unless COORD_RESTRICT_READS limits reads to those who may modify.

    Mirrors `kernel.permissions.can_read` in SQL (owner, ACL users and groups, admins),
    so lists never show a job its detail would refuse.
    """
    if not settings.COORD_RESTRICT_READS or is_admin(user):
        return queryset
    names = [user.get_username(), *user.groups.values_list("name", flat=True)]
    allowed = Q(**{f"{prefix}owner_id": user.pk})
    for name in names:
        allowed |= Q(**{f"{prefix}acl__regex": _acl_pattern(name)})
    return queryset.filter(allowed)




def submitter_properties(properties: Mapping[str, str], caller: Any) -> dict[str, str]:
    """The job configuration as Oozie reads it: `user.name` checked against the caller (seed 001, section 9),
    then `${name}` references to other properties expanded (oozie.properties.expand_properties).

    A `user.name` naming someone else is refused unless the caller is an admin; a missing one is
    filled in with the caller's name. The job's owner is the caller either way (never `user.name`).
    Expansion follows Hadoop's Configuration: `oozie.wf.application.path=${nameNode}/user/${user.name}/app`
    names the application it means; a reference to no property stays as written (an EL function,
    or a variable the definition itself must resolve); a property that refers to itself is refused.
    """
    result = dict(properties)
    name = caller.get_username()
    claimed = result.get(USER_NAME)
    if claimed is None or claimed == "":
        result[USER_NAME] = name
    elif claimed != name and not is_admin(caller):
        raise JobPermissionDenied(f"user.name {claimed!r} does not match the authenticated user {name!r}")
    return expand_properties(result, user=result[USER_NAME], source="job configuration")
