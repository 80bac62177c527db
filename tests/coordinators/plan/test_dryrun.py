"""The dry-run contract of issue 4: `manage.py coord dryrun --config JOB.properties [--format] [--max-actions]`.

Run in-process with call_command and no database access allowed (pytest-django refuses any
query without the django_db mark), plus subprocesses to see exit codes and stderr.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

ROOT = Path(__file__).resolve().parents[3]
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$")

APP = """<coordinator-app name="c" frequency="{frequency}" start="${{start}}" end="{end}" timezone="UTC"
    xmlns="uri:oozie:coordinator:0.4">
  <datasets>
    <dataset name="logs" frequency="${{coord:hours(1)}}" initial-instance="2009-01-01T00:00Z" timezone="UTC">
      <uri-template>hdfs://bar:8020/logs/${{YEAR}}/${{MONTH}}/${{DAY}}/${{HOUR}}</uri-template>
    </dataset>
  </datasets>
  <input-events>
    <data-in name="window" dataset="logs">
      <start-instance>${{coord:current(-23)}}</start-instance><end-instance>${{coord:current(0)}}</end-instance>
    </data-in>
    <data-in name="fresh" dataset="logs"><instance>${{coord:latest(0)}}</instance></data-in>
    <data-in name="next" dataset="logs">
      <start-instance>${{coord:future(0, 5)}}</start-instance><end-instance>${{coord:future(1, 5)}}</end-instance>
    </data-in>
  </input-events>
  <output-events><data-out name="out" dataset="logs"><instance>${{coord:current(0)}}</instance></data-out></output-events>
  <action><workflow><app-path>task:examples.pipeline.aggregate</app-path><configuration>
    <property><name>input</name><value>${{coord:dataIn('window')}}</value></property>
    <property><name>fresh</name><value>${{coord:dataIn('fresh')}}</value></property>
    <property><name>when</name><value>${{coord:nominalTime()}}</value></property>
  </configuration></workflow></action>
</coordinator-app>"""


def write_app(directory: Path, *, frequency: str = "${coord:days(1)}", end: str = "2009-01-05T00:00Z") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "coordinator.xml"
    path.write_text(APP.format(frequency=frequency, end=end))
    return path


def write_properties(path: Path, app_path: str, start: str = "2009-01-02T00:00Z") -> Path:
    path.write_text(f"oozie.coord.application.path={app_path}\nstart={start}\nuser.name=ann\n")
    return path


def dryrun(config: Path, *args: str) -> Any:
    out = StringIO()
    call_command("coord", "dryrun", "--config", str(config), *args, stdout=out)
    text = out.getvalue()
    return json.loads(text) if "--format" not in args else text


@pytest.mark.parametrize(
    "location",
    [
        pytest.param("relative-directory", id="relative-to-the-properties-file"),
        pytest.param("relative-file", id="relative-path-to-the-xml"),
        pytest.param("absolute", id="absolute-path"),
        pytest.param("file-uri", id="file-uri"),
    ],
)
def test_application_path_forms(tmp_path: Path, location: str) -> None:
    """oozie.coord.application.path: relative to the properties file, absolute, or file://; a directory means coordinator.xml."""
    xml = write_app(tmp_path / "apps" / "c")
    app_path = {
        "relative-directory": "apps/c", "relative-file": "apps/c/coordinator.xml",
        "absolute": str(xml.parent), "file-uri": f"file://{xml}",
    }[location]
    (tmp_path / "conf").mkdir()
    config = write_properties(tmp_path / "conf" / "job.properties", ("../" + app_path) if location.startswith("relative") else app_path)
    assert len(dryrun(config)["actions"]) == 3


def test_json_shape_and_values(tmp_path: Path) -> None:
    """The documented shape exactly: number, nominal_time (UTC), data_in, data_out, app_path, configuration; end exclusive."""
    write_app(tmp_path / "app")
    actions = dryrun(write_properties(tmp_path / "job.properties", "app"))["actions"]
    assert [a["number"] for a in actions] == [1, 2, 3]  # 01-02, 01-03, 01-04: the end 01-05 is exclusive
    assert [a["nominal_time"] for a in actions] == ["2009-01-02T00:00Z", "2009-01-03T00:00Z", "2009-01-04T00:00Z"]
    first = actions[0]
    assert list(first) == ["number", "nominal_time", "data_in", "data_out", "app_path", "configuration"]
    assert all(TIME.match(a["nominal_time"]) for a in actions)
    window = [f"hdfs://bar:8020/logs/2009/01/{d}/{h:02d}" for d, h in [("01", h) for h in range(1, 24)] + [("02", 0)]]
    assert first["data_in"]["window"] == window
    assert first["data_out"] == {"out": ["hdfs://bar:8020/logs/2009/01/02/00"]}
    assert first["app_path"] == "task:examples.pipeline.aggregate"
    assert first["configuration"] == {
        "input": ",".join(window), "fresh": "${coord:dataIn('fresh')}", "when": "2009-01-02T00:00Z",
    }


def test_latest_and_future_are_shown_as_their_expressions(tmp_path: Path) -> None:
    """Functions that need storage stay unresolved in dry-run output, shown as written."""
    write_app(tmp_path / "app")
    first = dryrun(write_properties(tmp_path / "job.properties", "app"))["actions"][0]
    assert first["data_in"]["fresh"] == ["${coord:latest(0)}"]
    assert first["data_in"]["next"] == ["${coord:future(0, 5)}", "${coord:future(1, 5)}"]


def test_max_actions_defaults_to_1000(tmp_path: Path) -> None:
    """Without --max-actions at most 1000 actions are printed; --max-actions N prints N."""
    write_app(tmp_path / "app", frequency="${coord:minutes(1)}", end="2010-01-01T00:00Z")
    config = write_properties(tmp_path / "job.properties", "app")
    actions = dryrun(config)["actions"]
    assert len(actions) == 1000 and actions[-1]["nominal_time"] == "2009-01-02T16:39Z"
    assert len(dryrun(config, "--max-actions", "7")["actions"]) == 7


def test_text_format(tmp_path: Path) -> None:
    """--format text prints one block per action and a count."""
    write_app(tmp_path / "app")
    text = dryrun(write_properties(tmp_path / "job.properties", "app"), "--format", "text")
    assert text.splitlines()[0] == "action 1  nominal 2009-01-02T00:00Z  app task:examples.pipeline.aggregate"
    assert text.rstrip().endswith("3 action(s)")


@override_settings(OOZIE_PROCESSING_TIMEZONE="GMT+05:30")
def test_nominal_times_stay_utc_in_a_gmt_offset_processing_zone(tmp_path: Path) -> None:
    """The JSON's nominal_time is UTC whatever the processing zone; EL values are written in the processing zone (4.1)."""
    write_app(tmp_path / "app")
    first = dryrun(write_properties(tmp_path / "job.properties", "app"))["actions"][0]
    assert first["nominal_time"] == "2009-01-02T00:00Z"
    assert first["configuration"]["when"] == "2009-01-02T05:30+0530"


@override_settings(COORD_MAX_INSTANCES_PER_INPUT=10)
def test_instance_cap_comes_from_the_setting(tmp_path: Path) -> None:
    """COORD_MAX_INSTANCES_PER_INPUT caps what one data-in may resolve to: the 24-instance window is refused."""
    write_app(tmp_path / "app")
    with pytest.raises(CommandError, match="resolves to 24 instances; at most 10 are allowed"):
        dryrun(write_properties(tmp_path / "job.properties", "app"))


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        pytest.param("start=2009-01-02T00:00Z\n", "oozie.coord.application.path is not set", id="no-application-path"),
        pytest.param("oozie.coord.application.path=missing\n", "cannot read coordinator application", id="missing-application"),
        pytest.param("oozie.coord.application.path=app\n", "<start>: variable 'start' cannot be resolved", id="unresolved-variable"),
        pytest.param("oozie.coord.application.path=app\nstart=2009-01-06T00:00Z\n", "is not after start", id="end-before-start"),
        pytest.param("oozie.coord.application.path=http://example.com/app\n", "reads local files (file://) only", id="remote-application"),
        pytest.param("oozie.coord.application.path=app\nstart=2009-01-02T00:00\n", "not a datetime", id="datetime-without-zone"),
    ],
)
def test_refusals_are_one_line_command_errors(tmp_path: Path, properties: str, message: str) -> None:
    """A rejected definition is a CommandError with a single line naming the problem."""
    write_app(tmp_path / "app")
    config = tmp_path / "job.properties"
    config.write_text(properties)
    with pytest.raises(CommandError) as caught:
        dryrun(config)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_max_actions_must_be_positive(tmp_path: Path) -> None:
    """--max-actions 0 is refused."""
    with pytest.raises(CommandError, match="at least 1"):
        dryrun(tmp_path / "job.properties", "--max-actions", "0")


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        pytest.param("<start-instance>${coord:current(-1000000000)}</start-instance><end-instance>${coord:current(1000000000)}</end-instance>",
                     "at most 10000 are allowed", id="hostile-range"),
        pytest.param("<instance>${" + "(" * 500 + "1" + ")" * 500 + "}</instance>", "nested deeper than 100", id="deeply-nested-el"),
        pytest.param("<instance>${coord:current(0)}</instance>", "unknown time zone 'Mars/Olympus'", id="unknown-time-zone"),
    ],
)
def test_exit_code_and_stderr_of_a_refusal(tmp_path: Path, inputs: str, message: str) -> None:
    """Exit code 1, one line on stderr naming the problem, no traceback (a subprocess, as a user runs it)."""
    (tmp_path / "app").mkdir()
    xml = APP.format(frequency="${coord:days(1)}", end="2009-01-05T00:00Z")
    xml = re.sub(r'<data-in name="window" dataset="logs">.*?</data-in>', f'<data-in name="window" dataset="logs">{inputs}</data-in>', xml, flags=re.S)
    if "Mars" in message:
        xml = xml.replace('timezone="UTC"', 'timezone="Mars/Olympus"', 1)
    (tmp_path / "app" / "coordinator.xml").write_text(xml)
    config = write_properties(tmp_path / "job.properties", "app")
    result = subprocess.run(  # noqa: S603 - our own interpreter and manage.py
        [sys.executable, "manage.py", "coord", "dryrun", "--config", str(config)],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("CommandError: ") and message in result.stderr


def test_a_single_instance_long_before_the_initial_one_is_dropped(tmp_path: Path) -> None:
    """<instance>${coord:current(-1000000000)}</instance> is one instance before the initial one: dropped (6.6.10), fast."""
    write_app(tmp_path / "app")
    xml = (tmp_path / "app" / "coordinator.xml").read_text()
    xml = re.sub(r'<data-in name="window" dataset="logs">.*?</data-in>',
                 '<data-in name="window" dataset="logs"><instance>${coord:current(-1000000000)}</instance></data-in>', xml, flags=re.S)
    (tmp_path / "app" / "coordinator.xml").write_text(xml)
    first = dryrun(write_properties(tmp_path / "job.properties", "app"))["actions"][0]
    assert first["data_in"]["window"] == []
