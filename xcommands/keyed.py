"""The keyed-job API of the seed: run any allowed Celery task with per-key FIFO, retries, rollback."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from celery import current_app as app  # project.celery's app, set up by this process

from kernel import task_registry, user_tasks
from kernel.user_tasks import TaskNotAllowed
from xcommands.base import XCommand
from xcommands.errors import PermanentError
from xcommands.models import Command
from xcommands.queue import enqueue

#: Keys the service itself uses (completions of operations run under `operation:<target>`).
RESERVED_KEY_PREFIXES = ("operation:",)

__all__ = ["TaskNotAllowed", "KeyedJobXCommand", "check_task_allowed", "enqueue_job"]


def _celery_app() -> Any:
    # The Celery app sits at the top of the stack: looked up when a task is, never imported by this module.

    return app


def check_task_allowed(task_name: str) -> None:
    """Refuse internal tasks, tasks outside ALLOWED_TASKS (kernel.user_tasks) and unregistered ones."""
    user_tasks.check(task_name)
    if task_name not in task_registry.tasks(_celery_app()):
        raise TaskNotAllowed(f"no Celery task is registered as {task_name!r}")


def _run_task(task_name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call the task's body here, after the allow-list is checked again (it may have changed since submission)."""
    if reason := user_tasks.refusal(task_name):
        raise PermanentError(reason)
    task = task_registry.tasks(_celery_app()).get(task_name)
    if task is None:
        raise PermanentError(f"no Celery task is registered as {task_name!r} in this worker")
    return task(*args, **kwargs)


@dataclass
class KeyedJobXCommand(XCommand):
    """Run the named Celery task in-process under the job key; its rollback task on failure."""

    key: str
    task_name: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    rollback_task: str | None = None
    transactional: bool = False

    command_name = "xcommands.KeyedJobXCommand"

    def job_key(self) -> str:
        """The caller's key."""
        return self.key

    def is_atomic(self) -> bool:
        """User tasks manage their own transactions unless the job asks for one."""
        return self.transactional

    def execute(self) -> Any:
        """Call the task's body in this worker process and keep its (JSON) return value."""
        return _run_task(self.task_name, self.args, self.kwargs)

    def rollback(self, error: str) -> None:
        """Call the rollback task, if any, with the job's arguments and the error."""
        if self.rollback_task:
            _run_task(self.rollback_task, self.args, {**self.kwargs, "error": error})


def enqueue_job(
    key: str,
    task_name: str,
    *,
    args: list[Any] | tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    max_retries: int = 3,
    rollback_task: str | None = None,
    transactional: bool = False,
    owner_id: int | None = None,
) -> Command:
    """Queue a Celery task under a key: one at a time per key, FIFO, with retries and rollback."""
    if key.startswith(RESERVED_KEY_PREFIXES):
        raise TaskNotAllowed(f"key {key[:60]!r}: keys starting with {', '.join(RESERVED_KEY_PREFIXES)} are reserved")
    check_task_allowed(task_name)
    if rollback_task:
        check_task_allowed(rollback_task)
    if max_retries < 0 or max_retries > 100:
        raise ValueError("max_retries must be between 0 and 100")
    command = KeyedJobXCommand(
        key=key,
        task_name=task_name,
        args=list(args),
        kwargs=dict(kwargs or {}),
        rollback_task=rollback_task,
        transactional=transactional,
    )
    return enqueue(command, max_retries=max_retries, owner_id=owner_id)
