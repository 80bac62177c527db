"""The Celery task action: an allowed, registered task called in this process with args and kwargs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from celery import shared_task

from workflows.actions import ActionContext, ActionResult, execute
from workflows.actions.celery import task_refusal

CONTEXT = ActionContext(
    workflow_id="0000001-260101000000000-oozie-W", node_name="compute",
    configuration={"output": "", "region": "eu"}, user="ann", nominal_time="2026-01-01T00:00:00+00:00",
)
CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = []


@shared_task(name="tests.wfaction.echo")
def echo(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """Record the call; return a map of what it got."""
    CALLS.append((args, kwargs))
    return {"args": ",".join(str(a) for a in args), **{k: v for k, v in kwargs.items() if isinstance(v, str)},
            "count": len(args), "ok": True, "nested": {"dropped": "not a scalar"}}


@shared_task(name="tests.wfaction.conf")
def conf_task(label: str, configuration: dict[str, str], nominal_time: str) -> dict[str, str]:
    """A task written for task: applications, with one extra parameter."""
    return {"label": label, "region": configuration["region"], "nominal": nominal_time}


@shared_task(name="tests.wfaction.lost")
def lost_connection() -> None:
    """Meets an infrastructure error."""
    raise ConnectionError("broker went away")


@shared_task(name="tests.wfaction.big")
def big() -> dict[str, str]:
    """Returns more data than Oozie allows."""
    return {f"key{i}": "x" * 100 for i in range(40)}


@pytest.fixture(autouse=True)
def allowed(settings: Any) -> None:
    """This module's tasks and the examples are allowed, as ALLOWED_TASKS would say (commands never are)."""
    settings.ALLOWED_TASKS = ["examples.*", "tests.wfaction.*", "*XCommand"]
    CALLS.clear()


def celery(task: str, args: list[str] | None = None, kwargs: dict[str, str] | None = None, **extra: Any) -> ActionResult:
    return execute("celery", {"task": task, "args": args or [], "kwargs": kwargs or {}, **extra}, CONTEXT)


def test_args_and_kwargs_reach_the_task_and_its_map_is_data() -> None:
    """The task runs here with the action's args and kwargs; a returned map of scalars becomes action data."""
    result = celery("tests.wfaction.echo", ["a", "b"], {"mode": "full"})
    assert (result.status, result.external_status) == ("OK", "SUCCEEDED")
    assert CALLS == [(("a", "b"), {"mode": "full"})]
    assert dict(result.data) == {"args": "a,b", "mode": "full", "count": "2", "ok": "true"}


def test_tasks_for_task_applications_get_configuration_and_nominal_time() -> None:
    """Parameters named configuration and nominal_time that the action does not fill are filled from the node."""
    result = celery("tests.wfaction.conf", ["first"])
    assert result.status == "OK", result
    assert dict(result.data) == {"label": "first", "region": "eu", "nominal": CONTEXT.nominal_time}
    result = celery("tests.wfaction.conf", kwargs={"label": "k", "nominal_time": "given"})
    assert dict(result.data)["nominal"] == "given"


def test_example_task_runs(tmp_path: Path) -> None:
    """The examples' tasks work as workflow actions: examples.produce writes its output instance."""
    context = ActionContext("w", "produce", {"output": f"file://{tmp_path}/out"}, "ann", "2026-01-01T00:00Z")
    result = execute("celery", {"task": "examples.produce", "args": [], "kwargs": {}}, context)
    assert result.status == "OK", result
    assert (tmp_path / "out" / "_SUCCESS").exists()
    assert dict(result.data) == {}  # it returns a string, not a map


def test_task_exception_is_an_error() -> None:
    """A task that raises is ERROR with the exception's class name as code and its text as message."""
    result = celery("examples.fail")
    assert (result.status, result.error_code, result.transient) == ("ERROR", "RuntimeError", False)
    assert "example failure" in result.error_message


def test_infrastructure_error_is_transient() -> None:
    """A lost connection is transient: the engine may launch the node again."""
    result = celery("tests.wfaction.lost")
    assert (result.status, result.error_code, result.transient) == ("ERROR", "ConnectionError", True)


def test_transient_errors_can_be_final(settings: Any) -> None:
    """WORKFLOW_RETRY_TRANSIENT_ERRORS=false makes every exception final."""
    settings.WORKFLOW_RETRY_TRANSIENT_ERRORS = False
    assert celery("tests.wfaction.lost").transient is False


def test_returned_data_is_limited(settings: Any) -> None:
    """A returned map larger than WORKFLOW_MAX_OUTPUT_DATA is an error, as captured output is."""
    result = celery("tests.wfaction.big")
    assert (result.status, result.error_code) == ("ERROR", "OUTPUT_LIMIT")
    settings.WORKFLOW_MAX_OUTPUT_DATA = 100_000
    assert celery("tests.wfaction.big").status == "OK"


@pytest.mark.parametrize(
    ("task", "reason"),
    [
        pytest.param("celery.backend_cleanup", "internal to the service", id="celery-internal"),
        pytest.param("other.task", "is not allowed", id="not-in-allowed-patterns"),
        pytest.param("examples.no_such_task", "no Celery task named", id="unknown"),
        pytest.param("xcommands.KeyedJobXCommand", "internal to the service", id="command-task"),
        pytest.param("", "names no task", id="empty-name"),
    ],
)
def test_refused_tasks_fail_without_running(task: str, reason: str) -> None:
    """Tasks outside ALLOWED_TASKS, commands and unknown names: FAILED E0TASK, nothing runs."""
    result = celery(task)
    assert (result.status, result.error_code) == ("FAILED", "E0TASK")
    assert reason in result.error_message
    assert CALLS == []


def test_refusal_reads_the_setting(settings: Any) -> None:
    """The same rule as keyed jobs: narrowing the setting refuses a task that was allowed."""
    assert task_refusal("tests.wfaction.echo") == ""
    settings.ALLOWED_TASKS = ["examples.*"]
    assert "ALLOWED_TASKS" in task_refusal("tests.wfaction.echo")
    assert celery("tests.wfaction.echo").status == "FAILED"
    assert CALLS == []
