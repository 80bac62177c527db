"""Which Celery tasks a user may name: one allow-list for `task:<name>`, `<celery>` actions and keyed jobs.

A user names a task in three places: a coordinator action's `<app-path>task:<name></app-path>`
(or a workflow submitted as `task:<name>`), a workflow's `<celery><task>name</task></celery>`
action, and a keyed job's `task_name`. Each runs the task in a worker with the service's rights,
so each checks the same rule, at submission (a 400 naming the task, nothing stored) and again
in the worker before the task is called (the allow-list may have changed, a name may have come
from a `${...}` resolved late):

1. Internal tasks are never allowed, whatever ALLOWED_TASKS says: Celery's own (`celery.*`),
   every task in the namespace of an installed Django app (the engine's commands, services,
   runners and notifications: `xcommands.*`, `statusservice.*`, `workflows.*` ...) and every
   command's task (`*XCommand`).
2. Otherwise the name must match a glob pattern of ALLOWED_TASKS (default `actions.*`: a
   site's own tasks). The example tasks (`examples.*`) are allowed only where the operator
   lists them, as the walk-throughs do (docs/coordinators.md).

Whether the task is registered in a worker is the caller's question (it needs the Celery app).
"""

from __future__ import annotations

import fnmatch
from functools import lru_cache

from django.apps import apps
from django.conf import settings

#: Namespaces of tasks that are not installed apps' but are internal all the same.
EXTRA_INTERNAL_NAMESPACES = frozenset({"celery", "kombu", "django"})


class TaskNotAllowed(ValueError):  # noqa: N818 - reads as the reason: "TaskNotAllowed: ..."
    """The task name is internal, or not in ALLOWED_TASKS."""


def allowed_patterns() -> list[str]:
    """The glob patterns of ALLOWED_TASKS."""
    return [str(pattern) for pattern in settings.ALLOWED_TASKS]


@lru_cache(maxsize=1)
def internal_namespaces() -> frozenset[str]:
    """The first dotted part of every internal task name: installed apps' packages and labels, Celery's."""
    names = set(EXTRA_INTERNAL_NAMESPACES)
    for config in apps.get_app_configs():
        names.add(config.label)
        names.add(config.name.split(".", 1)[0])
    return frozenset(names)


def is_internal(task_name: str) -> bool:
    """Whether the name belongs to the service itself (never runnable by users)."""
    name = task_name.strip()
    namespace = name.split(".", 1)[0]
    return namespace in internal_namespaces() or name.endswith("XCommand")


def refusal(task_name: str) -> str:
    """Why a user may not run this task ('' when the allow-list admits it)."""
    name = task_name.strip()
    if not name:
        return "no task is named"
    if is_internal(name):
        return f"task {name!r} is internal to the service and cannot be run by users"
    patterns = allowed_patterns()
    if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
        return f"task {name!r} is not allowed (ALLOWED_TASKS: {', '.join(patterns) or 'none'})"
    return ""


def check(task_name: str) -> None:
    """TaskNotAllowed naming the task unless users may run it."""
    reason = refusal(task_name)
    if reason:
        raise TaskNotAllowed(reason)
