"""Site action types (workflows.actions.site): a class and its XSD registered by setting, run like a built-in action.

The example type is tests/workflows/actions/site_echo.py (`<echo>`, the example of docs/workflows.md).
Workflows are submitted and driven in this process as a worker runs them (tests/support/workflow_apps.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command

from kernel.models import TaskTry
from oozie.definitions import DefinitionError
from tests.support.workflow_apps import app, drive, submit
from tests.workflows.actions import site_echo
from workflows.actions import ActionContext, execute, site
from workflows.choices import NodeStatus as N
from workflows.choices import WorkflowStatus as W
from workflows.models import WorkflowJob, WorkflowNode
from xcommands import heartbeat

ECHO_NS = "uri:custom:echo-action:0.1"
ECHO = {ECHO_NS: "tests.workflows.actions.site_echo.EchoAction"}
CONTEXT = ActionContext(workflow_id="0000001-260101000000000-oozie-W", node_name="say", configuration={}, user="ann")


def echo(name: str, body: str, ok: str = "end") -> str:
    return f'<action name="{name}"><echo xmlns="{ECHO_NS}">{body}</echo><ok to="{ok}"/><error to="fail"/></action>'


@pytest.fixture
def registered(settings: Any) -> None:
    settings.WORKFLOW_ACTION_TYPES = ECHO


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine", "registered")
class TestThroughTheEngine:
    def test_a_site_action_runs_its_data_feeds_a_decision_and_its_log_is_kept(self, tmp_path: Path) -> None:
        """The registered executor runs on the worker: its action data is wf:actionData, what it logs is in its try."""
        directory = app(tmp_path, echo("say", "<message>hello ${who}</message>", ok="d") + (
            '<decision name="d"><switch><case to="end">${wf:actionData("say")["said"] eq "hello world"}</case>'
            '<default to="fail"/></switch></decision>'))
        workflow = submit(directory, who="world")
        drive()
        workflow.refresh_from_db()
        assert workflow.status == W.SUCCEEDED, workflow.error_message
        node = WorkflowNode.objects.get(workflow=workflow, name="say")
        assert (node.type, node.status, node.data) == ("echo", N.OK, {"said": "hello world"})
        (kept,) = TaskTry.objects.filter(object_id=node.id)
        assert "echo says: hello world" in kept.log

    def test_its_error_takes_the_error_transition(self, tmp_path: Path) -> None:
        """An ERROR of a site action is the node's error: its code and message, the error transition taken."""
        workflow = submit(app(tmp_path, echo("say", "<message>no</message><fail/>")))
        drive()
        workflow.refresh_from_db()
        node = WorkflowNode.objects.get(workflow=workflow, name="say")
        assert (node.status, node.error_code) == (N.ERROR, "ECHO_FAILED")
        assert workflow.status == W.KILLED and "echo was told to fail: no" in node.error_message

    @pytest.mark.parametrize(("body", "named"), [
        ("<wait-seconds>1</wait-seconds>", "message"),  # the XSD: <message> is required
        ("<message>x</message><colour>red</colour>", "colour"),
        ("<message>x</message><wait-seconds>soon</wait-seconds>", "echo wait-seconds 'soon' is not a number"),
        ("<message>x</message><wait-seconds>crash</wait-seconds>",
         "the echo action type cannot read its element: KeyError: \"a bug in the site's parse\""),
    ], ids=["xsd-missing-element", "xsd-unknown-element", "parse-refusal", "parse-crash"])
    def test_refused_at_submission_nothing_stored(self, tmp_path: Path, body: str, named: str) -> None:
        """Its XSD and its parse are checked at submission: one line naming the problem; no job stored."""
        with pytest.raises(DefinitionError) as raised:
            submit(app(tmp_path, echo("say", body)))
        assert named in str(raised.value) and "\n" not in str(raised.value)
        assert not WorkflowJob.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_an_unregistered_or_hadoop_action_is_refused_naming_the_extension_point(tmp_path: Path) -> None:
    """Without its registration <echo> is refused like map-reduce: one line naming WORKFLOW_ACTION_TYPES; nothing stored."""
    with pytest.raises(DefinitionError) as raised:
        submit(app(tmp_path, echo("say", "<message>x</message>")))
    assert "action type 'echo' (uri:custom:echo-action:0.1) is not supported" in str(raised.value)
    assert "WORKFLOW_ACTION_TYPES" in str(raised.value)
    hadoop = app(tmp_path, '<action name="mr"><map-reduce><resource-manager>rm</resource-manager>'
                           '<name-node>nn</name-node></map-reduce><ok to="end"/><error to="fail"/></action>', name="mr")
    config = tmp_path / "job.properties"
    config.write_text(f"oozie.wf.application.path={hadoop}\n")
    with pytest.raises(CommandError) as cli:
        call_command("job", "-run", "-config", str(config), "-user", "wf-user")
    message = str(cli.value)
    assert "'map-reduce' is not supported (Hadoop actions" in message and "WORKFLOW_ACTION_TYPES" in message
    assert "\n" not in message
    assert not WorkflowJob.objects.exists()


def test_a_namespace_mapped_to_none_is_switched_off(settings: Any) -> None:
    """A site may remove a built-in type: ssh 0.1 mapped to None leaves ssh 0.2 and distcp."""
    settings.WORKFLOW_ACTION_TYPES = {"uri:oozie:ssh-action:0.1": None, **ECHO}
    assert sorted(site.registered()) == ["uri:custom:echo-action:0.1", "uri:oozie:distcp-action:1.0",
                                         "uri:oozie:ssh-action:0.2"]
    assert site.executor("echo") is site.registered()[ECHO_NS]


@pytest.mark.parametrize(("mapping", "named"), [
    ({ECHO_NS: "tests.workflows.actions.site_echo.KILLED"}, "is not a subclass"),
    ({ECHO_NS: "tests.workflows.actions.nowhere.Echo"}, "cannot import"),
    ({"uri:custom:other:0.1": "tests.workflows.actions.site_echo.EchoAction"}, "has no XSD for this namespace"),
    ({"uri:oozie:shell-action:1.0": "tests.workflows.actions.site_echo.EchoAction"}, "belongs to a built-in"),
    ({ECHO_NS: "workflows.actions.ssh.SshAction"}, "has no XSD for this namespace"),
], ids=["not-a-site-action", "not-importable", "no-xsd", "reserved-namespace", "wrong-class"])
def test_a_wrong_registration_names_the_setting(settings: Any, mapping: dict[str, str], named: str) -> None:
    """A registration that cannot work is ImproperlyConfigured naming WORKFLOW_ACTION_TYPES and the problem."""
    settings.WORKFLOW_ACTION_TYPES = mapping
    with pytest.raises(ImproperlyConfigured) as raised:
        site.registered()
    assert "WORKFLOW_ACTION_TYPES" in str(raised.value) and named in str(raised.value)


def test_a_wrong_registration_is_a_system_check_error(settings: Any) -> None:
    """`manage.py check` (and every process's start) reports a registration that cannot load, as workflows.E001."""
    assert site.check_registrations() == []
    settings.WORKFLOW_ACTION_TYPES = {ECHO_NS: "tests.workflows.actions.nowhere.Echo"}
    (message,) = site.check_registrations()
    assert message.id == "workflows.E001" and "cannot import" in message.msg


@pytest.fixture
def refusable() -> Iterator[list[bool]]:
    """A lease kind whose renewals are refused once the list is not empty (the node moved on)."""
    refused: list[bool] = []

    def renew(held: dict[Any, int], expires: datetime) -> list[Any]:
        return [] if refused else list(held)

    heartbeat.register_kind("test-site-refusable", renew, lambda: 3.0)
    yield refused
    heartbeat._KINDS.pop("test-site-refusable", None)


@pytest.mark.django_db(transaction=True)  # the heartbeat thread's renewals touch the connection
@pytest.mark.usefixtures("registered")
def test_a_site_action_is_killed_when_its_lease_is_lost(refusable: list[bool]) -> None:
    """Lease lost while it runs: its kill is called once, and the run ends ERROR LEASE_LOST within seconds."""
    site_echo.KILLED.clear()
    with heartbeat.lease("test-site-refusable", "row", 1):
        began = time.monotonic()
        refusable.append(True)
        result = execute("echo", {"message": "x", "wait": "60", "fail": False}, CONTEXT)
    assert (result.status, result.error_code) == ("ERROR", "LEASE_LOST"), result
    assert "echo action [say] killed: this worker lost the node's lease" in result.error_message
    assert site_echo.KILLED == [(CONTEXT.workflow_id, "say")]
    assert time.monotonic() - began < 10


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("registered")
def test_a_site_action_under_a_held_lease_is_not_killed(refusable: list[bool]) -> None:
    """A lease renewed all along: no kill, the action's own result."""
    site_echo.KILLED.clear()
    with heartbeat.lease("test-site-refusable", "row", 1):
        result = execute("echo", {"message": "x", "wait": "2", "fail": False}, CONTEXT)
    assert (result.status, dict(result.data)) == ("OK", {"said": "x"}) and site_echo.KILLED == []
