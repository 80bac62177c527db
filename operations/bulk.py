"""Bulk verbs as operations: kill, suspend or resume every job a filter selects, one job per selected job.

Oozie's `oozie jobs -kill|-suspend|-resume -filter ...` and `PUT /oozie/v2/jobs?action=...`.
The target is the selection's owner scope (`coordinators:ann`, `bundles:*`); each job runs on
the selected job's own key, checks the caller's rights on that job, and carries the verb out
in the same transaction as its outcome, so a job that was killed is never recorded as
failed, nor the other way round. What the caller may not touch (or what is gone) is reported
as failed with the reason. A job whose status makes the verb a no-op (suspending an ended job,
resuming a running one, killing a killed one) is skipped, as Oozie's API skips it: its job
succeeds with `progress["skipped"]` saying why, and the operation lists it under `skipped`
without failing (docs/adr/0010-operations.md).

Kill and suspend may run beside each other on one scope, and two of a kind too; resume runs
beside resumes only (a resume racing a kill on the same jobs is refused at start).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ObjectDoesNotExist

from kernel.statemachine import IllegalTransition
from operations.registry import OperationType
from operations.services import start_operation
from xcommands.errors import PreconditionFailed

VERBS = ("kill", "suspend", "resume")
#: The progress key of a job the verb did not apply to, and why (operations.counts.skipped_jobs).
SKIPPED = "skipped"
COMPATIBLE = {"kill": {"kill", "suspend"}, "suspend": {"suspend", "kill"}, "resume": {"resume"}}

#: kind -> verb carried out on one job, in the caller's transaction: (job id, verb, user) -> None.
_ACTORS: dict[str, Callable[[str, str, Any], None]] = {}


def register_kind(kind: str, act: Callable[[str, str, Any], None]) -> None:
    """Let bulk verbs act on jobs of a kind (coordinator, bundle): `act(job_id, verb, user)` raises to refuse."""
    _ACTORS[kind] = act


def type_name(verb: str) -> str:
    """`bulk-kill` ..."""
    return f"bulk-{verb}"


def target_of(kind: str, owner: str | None) -> str:
    """The owner scope of a selection: `coordinators:ann`, or `coordinators:*` when the filter names no user."""
    return f"{kind}s:{owner or '*'}"


class BulkVerb(OperationType):
    """One selected job: check the caller's rights, carry the verb out, record the outcome (one transaction)."""

    verb: ClassVar[str] = ""
    atomic_jobs = True
    resumable = False
    max_retries = 3

    def start_or_resume_job(self, arg: Any, partition: str, context: Any) -> None:
        """Refusals (rights, a job that is gone) are this job's failure; a status the verb does not apply to is a skip."""
        user = get_user_model().objects.filter(pk=arg.get("user_id")).first()
        act = _ACTORS.get(str(arg.get("kind")))
        if user is None or act is None:
            context.mark_complete(False, "the user or the kind of job this operation acts for is gone")
            return
        try:
            act(partition, self.verb, user)
        except IllegalTransition as exc:  # the status makes the verb a no-op: skipped, reported, not a failure
            context.progress = {**context.progress, SKIPPED: str(exc) or type(exc).__name__}
            context.mark_complete(True)
            return
        except (PermissionError, PreconditionFailed, ObjectDoesNotExist) as exc:
            context.mark_complete(False, str(exc) or type(exc).__name__)
            return
        context.mark_complete(True)

    def complete_operation(self, arg: Any, target: str, success: bool) -> Any:
        """What was asked, for the record."""
        return {"verb": self.verb, "kind": arg.get("kind"), "filter": arg.get("filter", "")}


class BulkKill(BulkVerb):
    """Kill every selected job."""

    name = type_name("kill")
    verb = "kill"
    compatible_with = frozenset(type_name(v) for v in COMPATIBLE["kill"])


class BulkSuspend(BulkVerb):
    """Suspend every selected job."""

    name = type_name("suspend")
    verb = "suspend"
    compatible_with = frozenset(type_name(v) for v in COMPATIBLE["suspend"])


class BulkResume(BulkVerb):
    """Resume every selected job."""

    name = type_name("resume")
    verb = "resume"
    compatible_with = frozenset(type_name(v) for v in COMPATIBLE["resume"])


def start_bulk(kind: str, verb: str, job_ids: list[str], *, user: Any, owner: str | None, filter_text: str = "") -> Any:
    """Start the operation carrying `verb` out on each selected job (OperationConflict, ValueError)."""
    if verb not in VERBS:
        raise ValueError(f"bulk action {verb!r}: use {', '.join(VERBS)}")
    if kind not in _ACTORS:
        raise ValueError(f"no bulk verbs for {kind!r} jobs")
    if not job_ids:
        raise ValueError("the filter selects no job")
    arg = {"kind": kind, "user_id": user.pk, "filter": filter_text}
    return start_operation(type_name(verb), target_of(kind, owner), arg, job_ids, started_by=user)


def admin_threshold() -> int:
    """BULK_ADMIN_THRESHOLD: an admin selection larger than this runs as one operation (default 20)."""
    return int(settings.BULK_ADMIN_THRESHOLD)


def start_for_selection(kind: str, verb: str, queryset: Any, *, user: Any, filter_text: str = "") -> Any:
    """Start the operation for a selection of jobs (a queryset of them); its owner scope is their one owner, if one."""
    owners = list(queryset.order_by().values_list("owner__username", flat=True).distinct()[:2])
    job_ids = list(queryset.order_by("pk").values_list("pk", flat=True))
    return start_bulk(kind, verb, job_ids, user=user, owner=owners[0] if len(owners) == 1 else None, filter_text=filter_text)
