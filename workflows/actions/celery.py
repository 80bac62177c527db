"""The Celery task action (`<celery xmlns="uri:oozie:celery-action:0.1">`): a named task called in this worker.

Only tasks ALLOWED_TASKS allows (kernel.user_tasks: the one rule of `task:`, keyed jobs and
these actions; internal tasks never) and that this worker has registered. The task gets the action's args and
kwargs; a task written for `task:` applications (parameters `configuration`, `nominal_time`)
also gets those, unless the action passes them. A returned map becomes the node's action
data (wf:actionData), at most WORKFLOW_MAX_OUTPUT_DATA bytes as properties.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from celery import current_app as app  # project.celery's app, set up by this process

from kernel import capture, task_registry, user_tasks
from oozie.definitions import DefinitionError
from workflows.actions.base import OK, ActionContext, ActionResult, error, exception_text, failed
from workflows.actions.data import over_limit, properties_text
from workflows.actions.options import max_output_data
from workflows.settings import is_transient

INJECTED = ("configuration", "nominal_time")


def _app() -> Any:

    return app


def task_refusal(task_name: str) -> str:
    """Why this task may not run as a workflow action ('' when it may): the allow-list (kernel.user_tasks), then registration."""
    if reason := user_tasks.refusal(task_name):
        return reason
    if task_name not in task_registry.tasks(_app()):
        return f"no Celery task named {task_name!r} is registered"
    return ""


def check_definition_tasks(definition: Any, source: str) -> None:
    """Refuse (DefinitionError naming node and task) a <celery> action whose task users may not run.

    Called at submission, so a refused task stores nothing; a task name still holding `${...}`
    is resolved later and checked where it runs (`execute`), as every name is again there.
    """
    for node in definition.nodes.values():
        if node.kind != "action" or node.action_type != "celery":
            continue
        task_name = str(node.spec.get("task", "")).strip()
        if "${" in task_name:
            continue
        if reason := user_tasks.refusal(task_name):
            raise DefinitionError(f"celery action [{node.name}]: {reason}", source=source, element="task")


def _injected(task: Any, args: list[Any], kwargs: dict[str, Any], context: ActionContext) -> dict[str, Any]:
    """kwargs plus configuration / nominal_time for tasks that take them and were not given them."""
    try:
        parameters = list(inspect.signature(task.run).parameters.values())
    except (TypeError, ValueError):
        return kwargs
    values = {"configuration": dict(context.configuration), "nominal_time": context.nominal_time}
    extra = dict(kwargs)
    for position, parameter in enumerate(parameters):
        if parameter.name not in INJECTED or parameter.name in extra:
            continue
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY or (
            parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and position >= len(args)
        ):
            extra[parameter.name] = values[parameter.name]
    return extra


def _data(value: Any) -> dict[str, str]:
    """A returned map of names to scalars, as strings; anything else is no data."""
    if not isinstance(value, Mapping):
        return {}
    scalar = (str, int, float, bool)
    return {
        str(key): (("true" if item else "false") if isinstance(item, bool) else str(item))
        for key, item in value.items() if isinstance(item, scalar)
    }


def execute(spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
    """Call the task: OK with its data; ERROR with the exception's class name as code; FAILED when refused."""
    task_name = str(spec.get("task", "")).strip()
    refusal = task_refusal(task_name) if task_name else "the celery action names no task"
    if refusal:
        return failed("E0TASK", f"celery action [{context.node_name}]: {refusal}")
    task = task_registry.tasks(_app())[task_name]
    args = list(spec.get("args", ()))
    kwargs = _injected(task, args, {str(k): v for k, v in dict(spec.get("kwargs", {})).items()}, context)
    try:
        value = task(*args, **kwargs)
    except Exception as exc:  # the task's own failure, or an infrastructure error it met
        capture.note_exception(exc)
        return error(type(exc).__name__[:64], exception_text(exc), transient=is_transient(exc), external_status="FAILED")
    data = _data(value)
    if message := over_limit(len(properties_text(data).encode("utf-8")), max_output_data()):
        return error("OUTPUT_LIMIT", message, external_status="FAILED")
    return ActionResult(OK, data=data, external_status="SUCCEEDED")
