"""One allow-list for every way a user names a task (security issue, items 1 and 2).

Rules (kernel.user_tasks):
- `task:<name>` app-paths, workflows' `<celery>` actions and keyed jobs all check ALLOWED_TASKS,
  at submission (a 400 naming the task, nothing stored) and again in the worker;
- internal tasks (`celery.*`, every task of an installed app's namespace, commands' tasks) are
  never allowed, not even under ALLOWED_TASKS=*;
- the example tasks are not allowed by default: the default is `actions.*`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from coordinators.models import CoordinatorJob
from kernel import user_tasks
from project.celery import app
from tests.coordinators.api.factories import api, coordinator_xml, user, window
from tests.oozieapi.client import Oozie, error_of
from tests.support.processes import wait_until
from tests.workflows.api.factories import APP_PATH, celery, write_app
from workflows.actions import ActionContext, execute
from workflows.models import WorkflowJob, WorkflowNode
from workflows.runner import invoke
from xcommands.errors import PermanentError
from xcommands.keyed import KeyedJobXCommand, enqueue_job
from xcommands.models import Command

ROOT = Path(__file__).resolve().parents[2]
#: The names the probe of the issue saw accepted; each must be among the internal names tested.
PROBED = ("xcommands.service.purge", "celery.backend_cleanup", "statusservice.tick", "workflows.notify")


def internal_task_names() -> list[str]:
    """Every task a worker registers that belongs to the service itself (the engine's commands and services, Celery's)."""
    app.loader.import_default_modules()
    names = sorted(name for name in app.tasks if user_tasks.is_internal(name))
    assert set(PROBED) <= set(names), "the probe's task names are not registered: the list is not the workers'"
    assert not [name for name in names if name.startswith("examples.")]
    return names


def stored() -> tuple[int, int, int]:
    """Commands, coordinator jobs and workflow jobs stored (a refusal changes none)."""
    return Command.objects.count(), CoordinatorJob.objects.count(), WorkflowJob.objects.count()


def celery_app(directory: Path, task: str) -> Path:
    """A workflow application whose one action is `<celery><task>task</task>`."""
    xml = ('<workflow-app name="one" xmlns="uri:oozie:workflow:1.0"><start to="run"/>'
           + celery("run", task, ok="end")
           + '<kill name="fail"><message>failed</message></kill><end name="end"/></workflow-app>')
    return write_app(directory, xml)


# ---- the three ways in, at submission --------------------------------------------------------------


def submit_keyed(owner: User, task: str, tmp_path: Path) -> tuple[int, str]:
    """POST /api/v1/keyed-jobs/."""
    response = api(owner).post("/api/v1/keyed-jobs/", {"key": "k", "task_name": task}, format="json")
    return response.status_code, response.content.decode()


def submit_task_app(owner: User, task: str, tmp_path: Path) -> tuple[int, str]:
    """POST /api/v1/coordinator-jobs/ with `<app-path>task:<name></app-path>`."""
    body = {"definition": coordinator_xml(task=task), "properties": window(), "start": True}
    response = api(owner).post("/api/v1/coordinator-jobs/", body, format="json")
    return response.status_code, response.content.decode()


def submit_celery_action(owner: User, task: str, tmp_path: Path) -> tuple[int, str]:
    """POST /oozie/v2/jobs?action=start naming a workflow application with a `<celery>` action."""
    directory = celery_app(tmp_path / task.replace("*", "_"), task)
    response = Oozie(owner).submit({APP_PATH: str(directory)}, action="start")
    return error_of(response)[0] if response.status_code != 201 else 201, response.content.decode()


WAYS_IN: dict[str, Callable[[User, str, Path], tuple[int, str]]] = {
    "keyed-job": submit_keyed,
    "task-app-path": submit_task_app,
    "celery-action": submit_celery_action,
}


@pytest.fixture
def ann(db: None) -> User:
    """A submitter (not staff)."""
    return user("ann")


@pytest.mark.django_db
@pytest.mark.parametrize("way", list(WAYS_IN))
def test_every_internal_task_is_refused_at_submission_even_under_a_star(
    way: str, ann: User, settings: Any, tmp_path: Path,
) -> None:
    """ALLOWED_TASKS=*: every internal task name is still a 400 naming it, and nothing is stored."""
    settings.ALLOWED_TASKS = ["*"]
    refused: list[str] = []
    for name in internal_task_names():
        status, body = WAYS_IN[way](ann, name, tmp_path)
        if status == 400 and name in body and "internal" in body:
            refused.append(name)
    assert refused == internal_task_names()
    assert stored() == (0, 0, 0)


@pytest.mark.django_db
@pytest.mark.parametrize("way", list(WAYS_IN))
@pytest.mark.parametrize("task", ["examples.listing", "examples.touch", "examples.produce", "examples.noop"])
def test_examples_are_refused_under_the_default(way: str, task: str, ann: User, settings: Any, tmp_path: Path) -> None:
    """Under the default (actions.*) an example task is a 400 naming the task and the setting; nothing stored."""
    settings.ALLOWED_TASKS = ["actions.*"]
    status, body = WAYS_IN[way](ann, task, tmp_path)
    assert status == 400, body
    assert task in body and "ALLOWED_TASKS" in body
    assert stored() == (0, 0, 0)


@pytest.mark.django_db
@pytest.mark.parametrize("way", list(WAYS_IN))
def test_a_listed_task_is_accepted_by_every_way_in(way: str, ann: User, settings: Any, tmp_path: Path) -> None:
    """The same list admits: with examples.* listed, examples.noop is accepted by all three (the rule is one)."""
    settings.ALLOWED_TASKS = ["examples.*"]
    status, body = WAYS_IN[way](ann, "examples.noop", tmp_path)
    assert status in (201, 202), body


def test_the_default_allows_no_example_task() -> None:
    """The setting's own default (no environment): actions.* only, so examples.* is refused."""
    env = {k: v for k, v in os.environ.items() if k not in ("ALLOWED_TASKS", "KEYED_JOB_ALLOWED_TASKS")}
    env["DJANGO_SETTINGS_MODULE"] = "project.settings"
    code = "from django.conf import settings; print(','.join(settings.ALLOWED_TASKS))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)  # noqa: S603
    assert out.stdout.strip() == "actions.*"
    env["KEYED_JOB_ALLOWED_TASKS"] = "actions.*,site.*"  # the earlier name still works
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)  # noqa: S603
    assert out.stdout.strip() == "actions.*,site.*"


@pytest.mark.parametrize(
    ("name", "internal"),
    [
        pytest.param("celery.backend_cleanup", True, id="celery-builtin"),
        pytest.param("statusservice.tick", True, id="beat-service"),
        pytest.param("coordinators.CoordKillXCommand", True, id="command"),
        pytest.param("site.SomethingXCommand", True, id="command-named-elsewhere"),
        pytest.param("admin.anything", True, id="installed-app-label"),
        pytest.param("examples.listing", False, id="examples-are-not-internal"),
        pytest.param("actions.load", False, id="site-task"),
        pytest.param("statusservicex.tick", False, id="prefix-is-a-whole-namespace"),
    ],
)
def test_what_is_internal(name: str, internal: bool) -> None:
    """Internal means Celery's, an installed app's namespace, or a command's task; a namespace is a whole dotted part."""
    assert user_tasks.is_internal(name) is internal


# ---- again in the worker ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_worker_refuses_internal_tasks_on_every_path(settings: Any) -> None:
    """Whatever reached a worker (a name resolved late, a setting changed): internal tasks are never called."""
    settings.ALLOWED_TASKS = ["*"]
    context = ActionContext(workflow_id="w", node_name="run", configuration={}, user="ann", nominal_time="")
    for name in internal_task_names():
        outcome = invoke(name, WorkflowJob(id="0000001-260101000000000-W", configuration={}), "w1@host:1")
        assert (outcome.status, outcome.error_code) == ("FAILED", "E0TASK") and "internal" in outcome.error_message, name
        result = execute("celery", {"task": name}, context)
        assert (result.status, result.error_code) == ("FAILED", "E0TASK") and "internal" in result.error_message, name
        with pytest.raises(PermanentError, match="internal"):
            KeyedJobXCommand(key="k", task_name=name).execute()


@pytest.mark.integration
def test_a_real_worker_checks_the_list_again(
    worker_env: Callable[..., dict[str, str]], live_workers: Callable[..., Any], settings: Any, tmp_path: Path,
) -> None:
    """A keyed job accepted at submission fails in a worker whose ALLOWED_TASKS no longer lists it; nothing runs."""
    settings.ALLOWED_TASKS = ["examples.*"]
    target = tmp_path / "touched"
    command = enqueue_job("k", "examples.touch", args=[str(target)], max_retries=0)
    live_workers(name="narrow", ALLOWED_TASKS="actions.*", WORKFLOW_FS_ROOTS=f"file://{tmp_path}")
    wait_until(lambda: Command.objects.get(pk=command.pk).status in ("FAILED", "SUCCEEDED"), 60, "the keyed job ended")
    ended = Command.objects.get(pk=command.pk)
    assert ended.status == "FAILED" and "ALLOWED_TASKS" in ended.last_error, ended.last_error
    assert not target.exists()
    assert WorkflowNode.objects.count() == 0
