"""Operation types: what a job does, how it is cancelled, what completion does, and what it may run beside.

A type is a registered subclass of `OperationType` (the seed's DistributedOperation):

- `start_or_resume_job(arg, partition, context)`: do the partition's work; record progress with
  `context.save_progress(...)`; end with `context.mark_complete(success)` (returning
  normally counts as success);
- `cancel_job_and_cleanup(arg, partition)`: undo a job that will not finish (cancelled, or failed);
- `complete_operation(arg, target, success)`: run once every job ended; idempotent (it may
  run again); returns what is stored as the operation's result;
- `may_fail`: whether a job may end in failure (else a failed job is a bug: the operation fails loudly);
- `resumable`: whether a job's next attempt resumes from its progress (else it starts over);
- `atomic_jobs`: whether a job's work and its outcome commit in one transaction (short jobs
  whose effect and outcome must not part), or its progress commits as it goes (long jobs);
- `compatible_with`: the types that may run on the same target at the same time (the seed's
  runOps); compatibility must be declared on both sides;
- `detached`: the jobs are driven by something else (a batch's stages, each a command of its
  own): `start_operation` records them RUNNING and queues nothing, and their driver ends each
  with `operations.services.end_job` (the same conditional write as `context.mark_complete`).
"""

from __future__ import annotations

from typing import Any, ClassVar

_TYPES: dict[str, OperationType] = {}


class UnknownOperationType(ValueError):  # noqa: N818 - reads as the condition
    """No operation type is registered under that name."""


class OperationType:
    """Base of operation types; subclasses set `name` and are registered on definition."""

    name: ClassVar[str] = ""
    may_fail: ClassVar[bool] = True
    resumable: ClassVar[bool] = True
    atomic_jobs: ClassVar[bool] = False
    compatible_with: ClassVar[frozenset[str]] = frozenset()
    detached: ClassVar[bool] = False
    #: Attempts of one job (the command engine's retries) before it fails.
    max_retries: ClassVar[int] = 5

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            _TYPES[cls.name] = cls()

    def start_or_resume_job(self, arg: Any, partition: str, context: Any) -> None:
        """Do one partition's work (must be overridden)."""
        raise NotImplementedError(f"operation type {self.name!r} has no job logic")

    def cancel_job_and_cleanup(self, arg: Any, partition: str) -> None:
        """Undo what an unfinished job did (nothing by default)."""
        return None

    def complete_operation(self, arg: Any, target: str, success: bool) -> Any:
        """Run once every job ended (idempotent); its return value is stored with the operation."""
        return None

    def compatible(self, other: OperationType) -> bool:
        """Whether an operation of this type may start while `other` runs on the same target."""
        return other.name in self.compatible_with and self.name in other.compatible_with


def operation_type(name: str) -> OperationType:
    """The registered type of that name, or UnknownOperationType."""
    try:
        return _TYPES[name]
    except KeyError:
        raise UnknownOperationType(f"no operation type is registered as {name!r}") from None


def registered_types() -> list[str]:
    """Every registered type name, sorted."""
    return sorted(_TYPES)
