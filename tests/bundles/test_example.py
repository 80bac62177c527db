"""The shipped example bundle (examples/pipeline/bundle.xml) validates, dry-runs and submits as written."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from bundles import services
from bundles.models import BundleJob
from coordinators.models import CoordinatorJob
from oozie.definitions import DefinitionError, parse_properties
from oozie.properties import BUNDLE_APP_PATH
from tests.bundles.factories import bundle_xml, window, write_coordinator
from tests.support.bundles import settle
from tests.support.processes import ROOT

PIPELINE = ROOT / "examples" / "pipeline"


def example_properties() -> dict[str, str]:
    """bundle.properties as the CLI reads it: its relative bundle path taken from the properties file's directory."""
    properties = parse_properties((PIPELINE / "bundle.properties").read_text())
    properties[BUNDLE_APP_PATH] = str(PIPELINE / properties[BUNDLE_APP_PATH])
    return properties


def test_the_example_bundle_dry_runs_both_coordinators_with_their_first_actions() -> None:
    """As an API user would (under the application roots): hourly (critical) and daily, each with its window."""
    result = services.dryrun_bundle(None, example_properties(), owner=User(username="ann"), now=timezone.now(),
                                    max_actions=2)
    assert (result["name"], result["kick_off_time"]) == ("pipeline", None)  # empty kickOffTime: at once
    hourly, daily = result["coordinators"]
    assert (hourly["name"], hourly["critical"], hourly["app_path"]) == ("hourly", True, str(PIPELINE / "hourly"))
    assert (daily["name"], daily["critical"], daily["app_path"]) == ("daily", False, str(PIPELINE / "daily"))
    assert (hourly["configuration"]["start"], hourly["configuration"]["end"]) == ("2026-01-01T00:00Z", "2026-01-03T00:00Z")
    assert (daily["configuration"]["start"], daily["configuration"]["end"]) == ("2026-01-02T00:00Z", "2026-01-04T00:00Z")
    first_hour = hourly["actions"][0]
    assert (first_hour["nominal_time"], first_hour["app_path"]) == ("2026-01-01T00:00Z", "task:examples.produce")
    assert first_hour["data_in"]["raw"] == ["file:///tmp/pipeline/raw/2026/01/01/00"]
    assert first_hour["data_out"]["hourly"] == ["file:///tmp/pipeline/hourly/2026/01/01/00"]
    first_day = daily["actions"][0]
    assert (first_day["nominal_time"], first_day["app_path"]) == ("2026-01-02T00:00Z", "workflow")  # daily/workflow/
    hours = first_day["data_in"]["hours"]
    assert len(hours) == 24 and hours[0].endswith("/hourly/2026/01/01/00") and hours[-1].endswith("/hourly/2026/01/01/23")
    assert first_day["data_out"]["day"] == ["file:///tmp/pipeline/daily/2026/01/01"]


def test_the_example_bundles_parameters_can_be_overridden() -> None:
    """Job properties win over the <parameters> defaults: another data root and a kick-off time."""
    properties = {**example_properties(), "dataRoot": "/srv/data", "kickOffTime": "2026-01-01T06:00Z"}
    result = services.dryrun_bundle(None, properties, owner=User(username="ann"), now=timezone.now(), max_actions=1)
    assert result["kick_off_time"] == "2026-01-01T06:00:00+00:00"
    assert result["coordinators"][0]["actions"][0]["data_in"]["raw"] == ["file:///srv/data/raw/2026/01/01/00"]


@pytest.mark.django_db
def test_the_example_bundle_submits_with_both_applications_stored() -> None:
    """-submit: PREP with both coordinators' XML, directories and the shared datasets.xml they include."""
    owner = User.objects.create_user("ann")
    bundle = services.submit_bundle_from_properties(example_properties(), owner=owner, start=False)
    assert bundle.status == "PREP" and bundle.app_name == "pipeline" and bundle.kick_off_time is None
    assert sorted(bundle.applications) == ["daily", "hourly"]
    for name in ("hourly", "daily"):
        snapshot = bundle.applications[name]
        assert snapshot["app_dir"] == str(PIPELINE / name)
        assert snapshot["definition"] == (PIPELINE / name / "coordinator.xml").read_text()
        assert [Path(url).name for url in snapshot["includes"]] == ["datasets.xml"]
    assert bundle.configuration["dataRoot"] == "/tmp/pipeline" and bundle.configuration["dailyStart"] == "2026-01-02T00:00Z"


@pytest.mark.django_db
def test_the_cli_dry_runs_the_example_bundle() -> None:
    """`manage.py job -dryrun -config examples/pipeline/bundle.properties` shows both coordinators."""
    User.objects.create_user("ann")
    out = StringIO()
    call_command("job", "-dryrun", "-config", str(PIPELINE / "bundle.properties"), "-user", "ann", "-len", "1", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("bundle pipeline") and lines[-1] == "2 coordinator(s), 2 enabled"
    assert f"coordinator hourly  app {PIPELINE / 'hourly'}  [critical]" in lines
    assert f"coordinator daily  app {PIPELINE / 'daily'}" in lines


def test_relative_app_paths_are_taken_from_the_bundles_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative <app-path> names a directory next to the bundle file, wherever the caller runs from."""
    apps = tmp_path / "apps"
    write_coordinator(apps, "hourly")
    xml = bundle_xml([("hourly", Path("hourly"))]).replace("file://hourly", "hourly")
    (apps / "bundle.xml").write_text(xml)
    monkeypatch.chdir(tmp_path)  # not the bundle's directory
    for path in (str(apps / "bundle.xml"), str(apps), f"file://{apps}/bundle.xml"):
        result = services.dryrun_bundle(xml, window(), owner=User(username="ann"), now=timezone.now(), app_path=path)
        assert result["coordinators"][0]["app_path"].removeprefix("file://") == str(apps / "hourly"), path
        assert result["coordinators"][0]["configuration"]["oozie.coord.application.path"].endswith("/apps/hourly")
    with pytest.raises(DefinitionError, match="coordinator 'hourly': .*is a relative path"):  # never read from the cwd
        services.dryrun_bundle(xml, window(), owner=User(username="ann"), now=timezone.now())  # from the cwd


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_a_coordinator_started_later_gets_its_full_app_path(tmp_path: Path) -> None:
    """The path resolved at submission is stored with the application and is what the started coordinator names."""
    apps = tmp_path / "apps"
    write_coordinator(apps, "hourly")
    xml = bundle_xml([("hourly", Path("hourly"))]).replace("file://hourly", "hourly")
    bundle = services.submit_bundle(xml, window(), owner=User.objects.create_user("ann"), app_path=str(apps))
    assert bundle.applications["hourly"]["app_path"] == str(apps / "hourly")
    settle()
    job = CoordinatorJob.objects.get(bundle_id=bundle.id)
    assert job.configuration["oozie.coord.application.path"] == str(apps / "hourly")
    assert BundleJob.objects.get(pk=bundle.pk).status == "RUNNING"
