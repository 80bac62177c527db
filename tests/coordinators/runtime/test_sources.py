"""Where submissions may read applications and includes from; what a job keeps of its includes."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from coordinators.models import CoordinatorJob
from coordinators.preparation import load_resolved
from coordinators.services import submit_coordinator, submit_from_properties
from oozie.definitions import DefinitionError

pytestmark = pytest.mark.django_db

APP = """<coordinator-app name="src" frequency="${coord:days(1)}" start="2026-01-01T00:00Z" end="2026-01-03T00:00Z"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <datasets><include>datasets.xml</include></datasets>
  <input-events><data-in name="in" dataset="d"><instance>${coord:current(0)}</instance></data-in></input-events>
  <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
</coordinator-app>"""
DATASETS = """<datasets><dataset name="d" frequency="${{coord:days(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
  <uri-template>file:///data/{version}/${{YEAR}}${{MONTH}}${{DAY}}</uri-template></dataset></datasets>"""


def app_dir(tmp_path: Path, version: str = "v1") -> Path:
    (tmp_path / "app").mkdir(exist_ok=True)
    (tmp_path / "app" / "coordinator.xml").write_text(APP)
    (tmp_path / "app" / "datasets.xml").write_text(DATASETS.format(version=version))
    return tmp_path / "app"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/etc/passwd", id="absolute-outside"),
        pytest.param("file:///etc", id="uri-outside"),
        pytest.param("{tmp}/../../etc/passwd", id="dot-dot-escape"),
        pytest.param("http://169.254.169.254/latest/", id="http-not-allowed"),
    ],
)
def test_submissions_read_only_under_the_application_roots(tmp_path: Path, path: str) -> None:
    """An API submission naming a file outside COORD_APPLICATION_ROOTS is refused before storage is touched."""
    owner = User.objects.create_user("s")
    with override_settings(COORD_APPLICATION_ROOTS=[f"file://{tmp_path}"]), pytest.raises(
        DefinitionError, match="outside the application roots|not allowed"
    ):
        submit_from_properties({"oozie.coord.application.path": path.format(tmp=tmp_path)}, owner=owner)
    assert CoordinatorJob.objects.count() == 0


def test_includes_outside_the_roots_are_refused_unless_trusted(tmp_path: Path) -> None:
    """An inline definition including a file outside the roots is refused; the CLI (trusted) may read it."""
    owner = User.objects.create_user("t")
    directory = app_dir(tmp_path)
    with override_settings(COORD_APPLICATION_ROOTS=["file:///nonexistent-root"]):
        with pytest.raises(DefinitionError, match="outside the application roots"):
            submit_coordinator(APP, {}, owner=owner, app_dir=str(directory), start=False)
        job = submit_coordinator(APP, {}, owner=owner, app_dir=str(directory), start=False, trusted=True)
    assert list(job.includes) == [f"{directory}/datasets.xml"]


def test_a_job_keeps_the_includes_it_was_submitted_with(tmp_path: Path) -> None:
    """Changing an included file after submission does not change the running job (its includes are stored)."""
    owner = User.objects.create_user("u")
    directory = app_dir(tmp_path, "v1")
    job = submit_from_properties({"oozie.coord.application.path": f"file://{directory}"}, owner=owner, start=False)
    (directory / "datasets.xml").write_text(DATASETS.format(version="v2"))
    resolved = load_resolved(CoordinatorJob.objects.get(pk=job.pk))
    assert "/data/v1/" in resolved.datasets["d"].uri_template
