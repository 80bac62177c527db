"""Examples are not a door: every shipped task that touches storage checks the roots `fs` actions do (item 1).

The probe of the issue wrote a file anywhere the service could (a `.pth` into site-packages)
with `examples.listing` as a keyed job. Rules:
- each shipped task that reads or writes a path refuses one outside WORKFLOW_FS_ROOTS (the
  batch processing task: outside BATCH_WORK_ROOT and those roots), before touching storage;
- through keyed jobs, `<celery>` actions and `task:` app-paths alike, even where the operator
  allows `examples.*`; nothing is written outside;
- inside the roots they still work (the walk-throughs run them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from coordinators.services import submit_coordinator
from statusservice.tasks import input_checks
from tests.coordinators.api.factories import api, coordinator_xml, user, window
from tests.support.processes import wait_until
from tests.workflows.api.factories import APP_PATH, drive, write_app
from workflows.choices import NodeStatus
from workflows.models import WorkflowNode
from workflows.services import submit_workflow
from xcommands import engine
from xcommands.keyed import enqueue_job
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]


@dataclass(frozen=True)
class Shipped:
    """A shipped task touching storage: how to call it on a path, and what it would write there."""

    name: str
    args: Callable[[Path], list[Any]]  # positional arguments naming the path
    configuration: Callable[[Path], dict[str, str]] | None = None  # for task: (configuration, nominal_time)
    written: Callable[[Path], Path] = lambda path: path


def _conf(**names: str) -> Callable[[Path], dict[str, str]]:
    return lambda path: {key: value.format(path=path) for key, value in names.items()}


SHIPPED = [
    Shipped("examples.listing", lambda p: ["file:///x", f"file://{p}/list.txt"], written=lambda p: p / "list.txt"),
    Shipped("examples.touch", lambda p: [f"{p}/touched"], written=lambda p: p / "touched"),
    Shipped("examples.fail_unless", lambda p: [f"{p}/flag"], written=lambda p: p / "flag"),
    Shipped("examples.produce", lambda p: [{"output": f"file://{p}/out"}, "t"], _conf(output="file://{path}/out"),
            written=lambda p: p / "out"),
    Shipped("examples.aggregate", lambda p: [{"input": f"file://{p}/in", "output": f"file://{p}/sum"}, "t"],
            _conf(input="file://{path}/in", output="file://{path}/sum"), written=lambda p: p / "sum"),
    Shipped("examples.record", lambda p: [{"log": f"{p}/log.jsonl"}, "t"], _conf(log="{path}/log.jsonl"),
            written=lambda p: p / "log.jsonl"),
    Shipped("examples.require", lambda p: [{"path": f"{p}/flag"}, "t"], _conf(path="{path}/flag"),
            written=lambda p: p / "flag"),
]
IDS = [task.name for task in SHIPPED]


@pytest.fixture
def places(tmp_path: Path, settings: Any) -> tuple[Path, Path]:
    """(inside, outside): WORKFLOW_FS_ROOTS admits only `inside`; `outside` exists and stays empty."""
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    settings.WORKFLOW_FS_ROOTS = [f"file://{inside}"]
    settings.BATCH_WORK_ROOT = str(inside / "ingest")
    settings.ALLOWED_TASKS = ["examples.*"]  # the operator allows the examples: the roots still hold
    return inside, outside


@pytest.fixture
def ann(transactional_db: None) -> User:
    """A submitter."""
    return user("ann")


def nothing_written(outside: Path) -> bool:
    """The outside directory is as it was: empty."""
    return not any(outside.iterdir())


@pytest.mark.parametrize("task", SHIPPED, ids=IDS)
def test_keyed_jobs_cannot_touch_paths_outside_the_roots(task: Shipped, places: tuple[Path, Path]) -> None:
    """A keyed job of a shipped task naming a path outside WORKFLOW_FS_ROOTS fails, naming the setting; nothing written."""
    _, outside = places
    command = enqueue_job("k", task.name, args=task.args(outside), max_retries=0)
    engine.process(command.pk)
    ended = Command.objects.get(pk=command.pk)
    assert ended.status == "FAILED" and "WORKFLOW_FS_ROOTS" in ended.last_error, ended.last_error
    assert nothing_written(outside)


@pytest.mark.parametrize("task", SHIPPED, ids=IDS)
def test_celery_actions_cannot_touch_paths_outside_the_roots(
    task: Shipped, places: tuple[Path, Path], ann: User, tmp_path: Path,
) -> None:
    """A `<celery>` action of a shipped task naming a path outside the roots ends in ERROR; nothing written."""
    _, outside = places
    arguments = task.args(outside)
    conf = task.configuration(outside) if task.configuration else {}
    args = "" if task.configuration else "".join(f"<arg>{a}</arg>" for a in arguments)
    xml = ('<workflow-app name="one" xmlns="uri:oozie:workflow:1.0"><start to="run"/>'
           f'<action name="run"><celery xmlns="uri:oozie:celery-action:0.1"><task>{task.name}</task>{args}</celery>'
           '<ok to="end"/><error to="fail"/></action>'
           '<kill name="fail"><message>failed</message></kill><end name="end"/></workflow-app>')
    directory = write_app(tmp_path / "apps" / task.name, xml)
    submit_workflow({APP_PATH: str(directory), "user.name": "ann", **conf}, owner=ann, trusted=True)
    drive()
    node = WorkflowNode.objects.get(name="run")
    assert node.status == NodeStatus.ERROR and "WORKFLOW_FS_ROOTS" in node.error_message, node.error_message
    assert nothing_written(outside)


@pytest.mark.parametrize("task", [t for t in SHIPPED if t.configuration], ids=[t.name for t in SHIPPED if t.configuration])
def test_task_app_paths_cannot_touch_paths_outside_the_roots(task: Shipped, places: tuple[Path, Path], ann: User) -> None:
    """A coordinator's `task:` action of a shipped task with an outside path in its configuration ends in error; nothing written."""
    _, outside = places
    assert task.configuration is not None
    conf = task.configuration(outside)
    passed = "".join(f"<property><name>{k}</name><value>${{{k}}}</value></property>" for k in conf)
    xml = coordinator_xml(task=task.name, extra=f"<configuration>{passed}</configuration>")
    job = submit_coordinator(xml, {**window(minutes_back=2, hours=1), **conf}, owner=ann)
    drive()
    input_checks()  # the due actions start as the tick starts them
    drive()
    node = WorkflowNode.objects.filter(workflow__coord_action__job=job).order_by("workflow__coord_action__number").first()
    assert node is not None and node.status == NodeStatus.ERROR, node and node.status
    assert "WORKFLOW_FS_ROOTS" in node.error_message, node.error_message
    assert nothing_written(outside)


def test_the_batch_processing_task_writes_only_under_the_work_root(places: tuple[Path, Path]) -> None:
    """examples.ingest_store as a keyed job with a working directory outside BATCH_WORK_ROOT and the roots: refused."""
    _, outside = places
    command = enqueue_job("k", "examples.ingest_store", kwargs={"working_dir": str(outside), "primary_id": "x"},
                          max_retries=0)
    engine.process(command.pk)
    ended = Command.objects.get(pk=command.pk)
    assert ended.status == "FAILED" and "BATCH_WORK_ROOT" in ended.last_error, ended.last_error
    assert nothing_written(outside)


def test_a_symbolic_link_inside_the_roots_does_not_lead_out(places: tuple[Path, Path]) -> None:
    """A link under a root pointing outside is followed by the check: writing through it is refused."""
    inside, outside = places
    (inside / "door").symlink_to(outside, target_is_directory=True)
    command = enqueue_job("k", "examples.touch", args=[f"{inside}/door/pwned"], max_retries=0)
    engine.process(command.pk)
    assert Command.objects.get(pk=command.pk).status == "FAILED"
    assert nothing_written(outside)


@pytest.mark.parametrize(
    ("name", "args", "made"),
    [
        pytest.param("examples.listing", ["file:///a,file:///b", "file://{inside}/list.txt"], "list.txt", id="listing"),
        pytest.param("examples.touch", ["{inside}/sub/touched"], "sub/touched", id="touch"),
        pytest.param("examples.produce", [{"output": "file://{inside}/out"}, "t"], "out/_SUCCESS", id="produce"),
    ],
)
def test_inside_the_roots_the_examples_still_work(name: str, args: list[Any], made: str, places: tuple[Path, Path]) -> None:
    """The walk-throughs' uses: under the roots each task writes what it always did."""
    inside, _ = places

    def fill(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return value.format(inside=inside) if isinstance(value, str) else value

    command = enqueue_job("k", name, args=[fill(a) for a in args], max_retries=0)
    engine.process(command.pk)
    assert Command.objects.get(pk=command.pk).status == "SUCCEEDED"
    assert (inside / made).exists()


@pytest.mark.integration
def test_the_probe_of_the_issue_fails_on_a_real_worker(
    live_workers: Callable[..., Any], places: tuple[Path, Path], ann: User,
) -> None:
    """The probe's request (examples.listing writing a file outside the roots) on a real worker: FAILED, nothing written."""
    inside, outside = places
    response = api(ann).post("/api/v1/keyed-jobs/", {
        "key": "probe", "task_name": "examples.listing", "args": ["import os", f"file://{outside}/evil.pth"],
    }, format="json")
    assert response.status_code == 201, response.content
    live_workers(name="w1", WORKFLOW_FS_ROOTS=f"file://{inside}", ALLOWED_TASKS="examples.*")
    command_id = response.json()["id"]
    wait_until(lambda: Command.objects.get(pk=command_id).status in ("FAILED", "SUCCEEDED"), 60, "the probe ended")
    assert Command.objects.get(pk=command_id).status == "FAILED"
    assert nothing_written(outside)
