"""Submission: configuration layered as Oozie layers it, variables resolved, functions kept or refused."""

from __future__ import annotations

import pytest

from oozie.definitions.errors import (
    ConfigurationError,
    DefinitionError,
    MissingParameterError,
)
from oozie.el import ELContext, evaluate_to_string
from tests.workflows.definitions.helpers import celery_action, fs_action, workflow
from workflows.definitions import WorkflowELError, prepare_workflow

PARAMS = (
    "<parameters><property><name>inputDir</name></property>"
    "<property><name>outputDir</name><value>out-dir</value></property>"
    "<property><name>mode</name><value>param</value></property></parameters>"
)
GLOBAL = (
    "<global><resource-manager>rm</resource-manager><configuration>"
    "<property><name>queue</name><value>${queue}</value></property>"
    "<property><name>shared</name><value>global</value></property></configuration></global>"
)


def prepare(xml: str, configuration: dict[str, str] | None = None, **kwargs):
    return prepare_workflow(xml, configuration or {}, app_path="file:///apps/wf", **kwargs)


def test_required_parameter_missing_is_refused_naming_it():
    """A <parameters> property without a value must come from the configuration (E0738)."""
    with pytest.raises(MissingParameterError) as caught:
        prepare(workflow(fs_action("a"), head=PARAMS))
    assert caught.value.missing == ("inputDir",)
    assert caught.value.reason == "required parameters not given: inputDir"


def test_parameter_defaults_applied():
    """A <parameters> default fills a property nobody else gives."""
    prepared = prepare(workflow(fs_action("a"), head=PARAMS), {"inputDir": "/in"})
    assert prepared.configuration["outputDir"] == "out-dir"
    assert prepared.configuration["inputDir"] == "/in"


@pytest.mark.parametrize(("job", "default", "expected"), [
    ({"inputDir": "/in"}, {}, "param"),
    ({"inputDir": "/in"}, {"mode": "config-default"}, "config-default"),
    ({"inputDir": "/in", "mode": "job"}, {"mode": "config-default"}, "job"),
], ids=["parameter-default", "config-default-over-parameter", "job-over-all"])
def test_layering_order(job, default, expected):
    """Oozie's order: job properties > config-default.xml > <parameters> defaults."""
    prepared = prepare(workflow(fs_action("a"), head=PARAMS), job, config_default=default)
    assert prepared.configuration["mode"] == expected


def test_config_default_satisfies_a_required_parameter():
    """config-default.xml is injected before parameters are verified (SubmitXCommand, then ParameterVerifier)."""
    prepared = prepare(workflow(fs_action("a"), head=PARAMS), {}, config_default={"inputDir": "/default-in"})
    assert prepared.configuration["inputDir"] == "/default-in"


def test_properties_reference_each_other():
    """`${other}` inside a property value is expanded, as Hadoop's Configuration does."""
    prepared = prepare(workflow(fs_action("a")), {"base": "/data"}, config_default={"out": "${base}/out"})
    assert prepared.configuration["out"] == "/data/out"


def test_disallowed_properties():
    """config-default.xml may not set user.name (E0804); nobody may set an EL constant (E0808)."""
    with pytest.raises(ConfigurationError) as caught:
        prepare(workflow(fs_action("a")), {}, config_default={"user.name": "root"})
    assert caught.value.reason == "config-default.xml may not set property 'user.name'"
    with pytest.raises(ConfigurationError) as caught:
        prepare(workflow(fs_action("a")), {"GB": "1"})
    assert caught.value.reason == "property 'GB' may not be set: it is an EL constant"


def test_prepared_workflow_fields():
    """The result: resolved definition, layered configuration (with the app path), app path, the XML as given."""
    xml = workflow(fs_action("a"), name="${team}-daily")
    prepared = prepare(xml, {"team": "sales"})
    assert prepared.definition.name == "sales-daily"
    assert prepared.app_path == "file:///apps/wf"
    assert prepared.xml == xml
    assert prepared.configuration == {"team": "sales", "oozie.wf.application.path": "file:///apps/wf"}


def test_global_configuration_under_the_actions_own():
    """<global> configuration goes under each action's configuration; the action's own value wins."""
    own = '<configuration><property><name>shared</name><value>mine</value></property></configuration>'
    body = fs_action("a", ok="b", ops=own + '<mkdir path="/x"/>') + celery_action("b")
    prepared = prepare(workflow(body, head=GLOBAL), {"queue": "etl"})
    assert prepared.definition.nodes["a"].spec["configuration"] == {"queue": "etl", "shared": "mine"}
    assert prepared.definition.nodes["b"].spec["configuration"] == {"queue": "etl", "shared": "global"}


def test_global_configuration_not_given_to_email():
    """Email actions have no configuration in Oozie: nothing is merged into them."""
    email = ('<action name="m"><email xmlns="uri:oozie:email-action:0.2"><to>a@x.org</to><subject>s</subject>'
             '<body>b</body></email><ok to="end"/><error to="fail"/></action>')
    prepared = prepare(workflow(email, head=GLOBAL, start="m"), {"queue": "etl"})
    assert "configuration" not in prepared.definition.nodes["m"].spec


def test_variables_resolved_everywhere():
    """Call-free expressions are evaluated at submission in specs, kill messages and decision predicates."""
    body = (
        '<decision name="d"><switch><case to="a">${size gt 2 * KB}</case><default to="fail"/></switch></decision>'
        + fs_action("a", ops='<move source="${inputDir}/x" target="${inputDir}/y"/>', error="boom")
        + '<kill name="boom"><message>failed in ${inputDir}</message></kill>'
    )
    prepared = prepare(workflow(body, start="d"), {"inputDir": "/in", "size": "4096"})
    nodes = prepared.definition.nodes
    assert nodes["d"].cases == (("true", "a"),)
    assert nodes["a"].spec["operations"] == [{"op": "move", "source": "/in/x", "target": "/in/y"}]
    assert nodes["boom"].message == "failed in /in"


def test_expressions_with_function_calls_are_kept():
    """An expression calling wf:/fs: functions is kept verbatim for launch; its variables are still checked."""
    body = (
        '<decision name="d"><switch><case to="a">${fs:exists(concat(out, "/_SUCCESS"))}</case><default to="a"/></switch></decision>'
        + fs_action("a", ops='<mkdir path="${out}/${wf:id()}"/>', error="boom")
        + '<kill name="boom"><message>${wf:errorMessage(wf:lastErrorNode())}</message></kill>'
    )
    nodes = prepare(workflow(body, start="d"), {"out": "/o"}).definition.nodes
    assert nodes["d"].cases == (('${fs:exists(concat(out, "/_SUCCESS"))}', "a"),)
    assert nodes["a"].spec["operations"] == [{"op": "mkdir", "path": "/o/${wf:id()}"}]
    assert nodes["boom"].message == "${wf:errorMessage(wf:lastErrorNode())}"


def test_unresolved_variable_refused_naming_variable_and_node():
    """A variable nobody defines refuses the submission, naming it and the node."""
    with pytest.raises(WorkflowELError) as caught:
        prepare(workflow(fs_action("cleanup", ops='<delete path="${tmpDir}/x"/>'), start="cleanup"))
    assert caught.value.reason == (
        "node 'cleanup': variable 'tmpDir' is not defined (no job property, config-default.xml value or "
        "<parameters> default) in ${tmpDir}"
    )
    assert "\n" not in str(caught.value)


def test_unresolved_variable_inside_a_function_call_refused():
    """Variables inside kept expressions are checked too (in a decision here)."""
    body = '<decision name="d"><switch><case to="a">${fs:exists(missingDir)}</case><default to="a"/></switch></decision>'
    with pytest.raises(WorkflowELError) as caught:
        prepare(workflow(body + fs_action("a"), start="d"))
    assert caught.value.reason.startswith("node 'd': variable 'missingDir' is not defined")
    assert caught.value.element == "case"


def test_unknown_function_refused():
    """A function the EL library does not know refuses the submission, naming it."""
    with pytest.raises(WorkflowELError) as caught:
        prepare(workflow(celery_action("a", inner="<arg>${hadoop:counters('x')}</arg>")))
    assert caught.value.reason == "node 'a': unknown EL function 'hadoop:counters' in ${hadoop:counters('x')}"


def test_invalid_el_refused():
    """EL that does not parse is refused naming the node."""
    with pytest.raises(WorkflowELError) as caught:
        prepare(workflow(fs_action("a", ops='<mkdir path="${a +}"/>')))
    assert caught.value.reason.startswith("node 'a': invalid EL in '${a +}'")


def test_el_constants_available():
    """KB, MB, GB, TB, PB are defined (spec 4.2.1)."""
    nodes = prepare(workflow(celery_action("a", inner="<arg>${2 * MB}</arg><arg>${PB / TB}</arg>"))).definition.nodes
    assert nodes["a"].spec["args"] == ["2097152", "1024.0"]  # EL's / is a floating-point division


def test_property_values_are_data_not_el():
    """A property value holding `${...}` is inserted escaped: evaluating the template at launch gives it back."""
    nodes = prepare(workflow(celery_action("a", inner="<arg>${raw}</arg>")), {"raw": "${not_el}"}).definition.nodes
    template = nodes["a"].spec["args"][0]
    assert template == "\\${not_el}"
    assert evaluate_to_string(template, ELContext()) == "${not_el}"


def test_retry_attributes_resolved():
    """retry-max / retry-interval may use variables (Oozie resolves them at submission); results must be integers."""
    body = fs_action("a", attrs=' retry-max="${retries}" retry-interval="${2 * wait}"')
    node = prepare(workflow(body), {"retries": "4", "wait": "3"}).definition.nodes["a"]
    assert (node.retry_max, node.retry_interval) == (4, 6)
    with pytest.raises(WorkflowELError) as caught:
        prepare(workflow(body), {"retries": "lots", "wait": "3"})
    assert caught.value.reason == "node 'a': retry-max '${retries}' resolves to 'lots', not a non-negative integer"


def test_sub_workflow_configuration_resolved_with_global():
    """sub-workflow: app path and configuration resolved; <global> configuration goes under it (Oozie does)."""
    sub = ('<action name="s"><sub-workflow><app-path>${apps}/child</app-path><configuration>'
           '<property><name>in</name><value>${inputDir}</value></property></configuration></sub-workflow>'
           '<ok to="end"/><error to="fail"/></action>')
    prepared = prepare(workflow(sub, head=GLOBAL, start="s"), {"apps": "file:///apps", "inputDir": "/in", "queue": "q"})
    assert prepared.definition.nodes["s"].spec == {
        "app_path": "file:///apps/child", "propagate_configuration": False,
        "configuration": {"queue": "q", "shared": "global", "in": "/in"},
    }


def test_name_resolving_to_empty_refused():
    """A workflow name that resolves to nothing is refused."""
    with pytest.raises(DefinitionError) as caught:
        prepare(workflow(fs_action("a"), name="${n}"), {"n": " "})
    assert caught.value.reason == "the workflow name '${n}' resolves to an empty string"
