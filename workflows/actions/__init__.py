"""Worker-side executors of workflow action nodes: fs, shell, email, celery (sub-workflow is the engine's),
and the site action types (workflows.actions.site: ssh, distcp and what WORKFLOW_ACTION_TYPES adds).

`execute(action_type, spec, context)` runs the node's `prepare` first (delete, mkdir), then
the action, and always answers with an ActionResult: an executor's own surprise becomes an
ERROR naming the exception, never a raised error. The spec is the node's spec with its
expressions already evaluated (workflows.el.resolve_spec).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from importlib import import_module
from typing import Any

from workflows.actions import fs, site
from workflows.actions.base import (
    ERROR,
    FAILED,
    OK,
    ActionContext,
    ActionResult,
    error,
    exception_text,
    failed,
)
from workflows.settings import is_transient

EXECUTORS = {"fs": "fs", "shell": "shell", "email": "email", "celery": "celery"}  # type -> module

__all__ = ["ERROR", "EXECUTORS", "FAILED", "OK", "ActionContext", "ActionResult", "execute"]


def execute(action_type: str, spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
    """Run one action node in this process: its prepare, then the action; FAILED for a type run elsewhere."""
    module = EXECUTORS.get(action_type)
    runner: Callable[[Mapping[str, Any], ActionContext], ActionResult]
    if module is not None:
        runner = import_module(f"workflows.actions.{module}").execute
    else:
        try:
            extension = site.executor(action_type)
        except Exception as exc:  # WORKFLOW_ACTION_TYPES broken since submission: the node cannot run here
            return failed("E0TYPE", f"action type [{action_type}] of node [{context.node_name}]: {exception_text(exc)}")
        if extension is None:
            return failed("E0TYPE", f"action type [{action_type}] of node [{context.node_name}] is not run by workers "
                          f"(no site action type of that name in {site.SETTING})")
        runner = partial(site.run, extension)
    try:
        prepared = fs.prepare(spec)
        if prepared is not None:
            return prepared
        return runner(spec, context)
    except Exception as exc:  # a bug or an unexpected storage error: the node errs, the worker lives on
        return error(type(exc).__name__[:64], exception_text(exc), transient=is_transient(exc))
