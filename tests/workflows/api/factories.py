"""Workflow applications for interface tests: a directory with workflow.xml, submitted and driven in process."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User

from tests.support.workflow_apps import drive as drive_nodes
from workflows.models import WorkflowJob, WorkflowNode
from workflows.services import submit_workflow

APP_PATH = "oozie.wf.application.path"
WF = 'xmlns="uri:oozie:workflow:1.0"'
CELERY = 'xmlns="uri:oozie:celery-action:0.1"'


def celery(name: str, task: str, *args: str, ok: str, error: str = "fail") -> str:
    """A celery action node."""
    arguments = "".join(f"<arg>{a}</arg>" for a in args)
    return (f'<action name="{name}"><celery {CELERY}><task>{task}</task>{arguments}</celery>'
            f'<ok to="{ok}"/><error to="{error}"/></action>')


def pipeline_xml(work: Path, name: str = "nightly") -> str:
    """prepare (fs) -> fork (extract: touch, check: fails unless `work/flag` exists) -> join -> decision -> end | fail."""
    return (
        f'<workflow-app name="{name}" {WF}><start to="prepare"/>'
        f'<action name="prepare"><fs><mkdir path="file://{work}/out"/></fs><ok to="split"/><error to="fail"/></action>'
        '<fork name="split"><path start="extract"/><path start="check"/></fork>'
        + celery("extract", "examples.touch", f"{work}/out/part-0", ok="merge")
        + celery("check", "examples.fail_unless", f"{work}/flag", ok="merge")
        + '<join name="merge" to="decide"/>'
        '<decision name="decide"><switch>'
        f'<case to="end">${{fs:exists("file://{work}/out/part-0")}}</case><default to="fail"/></switch></decision>'
        '<kill name="fail"><message>failed at ${wf:lastErrorNode()}</message></kill>'
        '<end name="end"/></workflow-app>'
    )


def write_app(directory: Path, xml: str) -> Path:
    """An application directory holding `xml` as workflow.xml."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "workflow.xml").write_text(xml)
    return directory


def pipeline_app(tmp_path: Path, name: str = "nightly") -> Path:
    """The pipeline application under tmp_path/<name> (its work files under tmp_path/work-<name>)."""
    return write_app(tmp_path / name, pipeline_xml(tmp_path / f"work-{name}", name))


def submit(directory: Path, owner: User, *, start: bool = True, **properties: str) -> WorkflowJob:
    """Submit the application as `owner` (untrusted, as the APIs do)."""
    return submit_workflow({APP_PATH: str(directory), "user.name": owner.username, **properties},
                           owner=owner, start=start)


def drive(rounds: int = 50) -> int:
    """Run queued nodes and commands in this process until nothing is left (as worker w1@host); how many nodes ran."""
    return drive_nodes(rounds, worker="w1@host")


def rows() -> tuple[int, int]:
    """Workflow jobs and nodes stored (a refusal changes neither)."""
    return WorkflowJob.objects.count(), WorkflowNode.objects.count()
