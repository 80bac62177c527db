"""workflow.xml parsing: control nodes, action specs, schemas, and refused documents (pure, no database)."""

from __future__ import annotations

import pytest

from oozie.definitions.errors import (
    DefinitionError,
    MalformedXMLError,
    SchemaValidationError,
    UnsafeXMLError,
    UnsupportedNamespaceError,
)
from tests.workflows.definitions.helpers import (
    CELERY,
    SHELL_1_0,
    celery_action,
    fork_join,
    fs_action,
    workflow,
)
from workflows.definitions import (
    MAX_NODES,
    START_NODE,
    NodeDef,
    TooManyNodesError,
    UnsupportedActionError,
    WorkflowDefinition,
    parse_workflow,
    parse_workflow_app,
)


def refused(xml: str, error: type[DefinitionError] = DefinitionError) -> DefinitionError:
    """Parse, expecting a refusal of this type, with a one-line message."""
    with pytest.raises(error) as caught:
        parse_workflow(xml)
    assert "\n" not in str(caught.value)
    return caught.value


# --- control nodes -----------------------------------------------------------------------------


def test_start_and_end():
    """start leads to its node (stored as Oozie's ':start:'); end has no transitions."""
    wf = parse_workflow(workflow("", start="end"))
    assert wf.start == "end"
    assert wf.nodes[START_NODE] == NodeDef(START_NODE, "start", to=("end",))
    assert wf.nodes["end"] == NodeDef("end", "end")
    assert wf.name == "wf" and wf.schema == "uri:oozie:workflow:1.0"


def test_kill_message_is_a_template():
    """A kill node keeps its message, EL included, for the engine."""
    xml = workflow(fs_action("a", error="boom")).replace(
        '<kill name="fail">', '<kill name="boom"><message>  died at ${wf:lastErrorNode()}  </message></kill><kill name="fail">'
    )
    node = parse_workflow(xml).nodes["boom"]
    assert (node.kind, node.message, node.transitions()) == ("kill", "died at ${wf:lastErrorNode()}", ())


def test_decision_cases_in_order_and_default():
    """A decision keeps its predicates in document order with their targets, and the default."""
    body = (
        '<decision name="a"><switch>'
        '<case to="b">\n  ${fs:exists(out)}\n</case><case to="end">${x gt 10 * GB}</case>'
        '<default to="fail"/></switch></decision>' + fs_action("b")
    )
    node = parse_workflow(workflow(body)).nodes["a"]
    assert node.kind == "decision"
    assert node.cases == (("${fs:exists(out)}", "b"), ("${x gt 10 * GB}", "end"))
    assert node.default == "fail"
    assert node.transitions() == ("b", "end", "fail")


def test_fork_and_join():
    """A fork lists its paths in order; its join is recorded in forks."""
    wf = parse_workflow(workflow(fork_join(["p1", "p2", "p3"]), start="f"))
    assert wf.nodes["f"].to == ("p1", "p2", "p3")
    assert wf.nodes["j"] == NodeDef("j", "join", to=("end",))
    assert dict(wf.forks) == {"f": "j"}


def test_nested_forks_each_get_their_join():
    """An inner fork inside a path of an outer fork pairs with its own join."""
    body = (
        '<fork name="outer"><path start="inner"/><path start="c"/></fork>'
        '<fork name="inner"><path start="a"/><path start="b"/></fork>'
        + fs_action("a", ok="ij") + fs_action("b", ok="ij")
        + '<join name="ij" to="oj"/>' + fs_action("c", ok="oj") + '<join name="oj" to="end"/>'
    )
    wf = parse_workflow(workflow(body, start="outer"))
    assert dict(wf.forks) == {"inner": "ij", "outer": "oj"}


def test_definition_round_trips_through_json():
    """What is stored with the job reads back equal."""
    wf = parse_workflow(workflow(fork_join(["p1", "p2"]), start="f"))
    assert WorkflowDefinition.from_json(wf.to_json()) == wf


# --- action specs --------------------------------------------------------------------------------


def test_fs_spec_shape():
    """fs: every operation in order; name-node and job-xml are Hadoop-only and ignored."""
    ops = (
        '<name-node>hdfs://nn:8020</name-node><job-xml>fs.xml</job-xml>'
        '<configuration><property><name>k</name><value> v </value></property></configuration>'
        '<delete path="/d"/><mkdir path="/m"/><move source="/s" target="/t"/>'
        '<chmod path="/c" permissions="755" dir-files="false"><recursive/></chmod><chmod path="/c2" permissions="-rwxr-xr-x"/>'
        '<touchz path="/z"/>'
    )
    node = parse_workflow(workflow(fs_action("a", ops=ops))).nodes["a"]
    assert (node.kind, node.action_type, node.to, node.error_to) == ("action", "fs", ("end",), "fail")
    assert node.spec == {
        "operations": [
            {"op": "delete", "path": "/d"},
            {"op": "mkdir", "path": "/m"},
            {"op": "move", "source": "/s", "target": "/t"},
            {"op": "chmod", "path": "/c", "permissions": "755", "dir_files": False, "recursive": True},
            {"op": "chmod", "path": "/c2", "permissions": "-rwxr-xr-x", "dir_files": True, "recursive": False},
            {"op": "touchz", "path": "/z"},
        ],
        "configuration": {"k": " v "},
    }


def test_fs_chgrp_is_refused_naming_the_node():
    """chgrp has no portable meaning on fsspec storage: refused, naming node and operation."""
    error = refused(workflow(fs_action("grp", ops='<chgrp path="/x" group="g"/>')), UnsupportedActionError)
    assert error.reason == (
        "action node 'grp': fs operation 'chgrp' is not supported (groups are not portable across fsspec storage)"
    )


@pytest.mark.parametrize("version", ["0.1", "0.2", "0.3", "1.0"])
def test_shell_spec_shape(version):
    """shell (0.1-0.3, 1.0): exec, arguments, env-vars, capture-output, prepare, configuration."""
    rm = "<resource-manager>rm:8032</resource-manager>" if version == "1.0" else "<job-tracker>jt:8021</job-tracker>"
    shell = (
        f'<shell xmlns="uri:oozie:shell-action:{version}">{rm}<name-node>hdfs://nn</name-node>'
        '<prepare><delete path="/out"/><mkdir path="/out"/></prepare>'
        '<configuration><property><name>q</name><value>default</value></property></configuration>'
        '<exec>echo.sh</exec><argument>a b</argument><argument>${x}</argument>'
        '<env-var>A=1</env-var><file>echo.sh#echo.sh</file><capture-output/></shell>'
    )
    ns = "uri:oozie:workflow:1.0" if version == "1.0" else "uri:oozie:workflow:0.5"
    body = f'<action name="sh">{shell}<ok to="end"/><error to="fail"/></action>'
    node = parse_workflow(workflow(body, ns=ns, start="sh")).nodes["sh"]
    assert node.action_type == "shell"
    assert node.spec == {
        "exec": "echo.sh", "args": ["a b", "${x}"], "env": ["A=1"], "capture_output": True,
        "configuration": {"q": "default"},
        "prepare": [{"op": "delete", "path": "/out"}, {"op": "mkdir", "path": "/out"}],
    }


@pytest.mark.parametrize("version", ["0.1", "0.2"])
def test_email_spec_shape(version):
    """email: comma-separated lists split (commas inside ${...} kept), content type defaulting to text/plain."""
    extra = "<content_type>text/html</content_type><attachment>/a.txt,/b.txt</attachment>" if version == "0.2" else ""
    email = (
        f'<email xmlns="uri:oozie:email-action:{version}"><to>a@x.org, b@x.org</to><cc>${{concat(c, ",d@x.org")}}</cc>'
        f'<subject>done ${{wf:id()}}</subject><body>all good</body>{extra}</email>'
    )
    ns = "uri:oozie:workflow:0.5"
    node = parse_workflow(workflow(f'<action name="mail">{email}<ok to="end"/><error to="fail"/></action>', ns=ns, start="mail")).nodes["mail"]
    assert node.spec == {
        "to": ["a@x.org", "b@x.org"], "cc": ['${concat(c, ",d@x.org")}'], "bcc": [],
        "subject": "done ${wf:id()}", "body": "all good",
        "content_type": "text/html" if version == "0.2" else "text/plain",
        "attachments": ["/a.txt", "/b.txt"] if version == "0.2" else [],
    }


def test_sub_workflow_spec_shape():
    """sub-workflow: app-path, propagate-configuration, configuration."""
    sub = (
        "<sub-workflow><app-path>${nameNode}/apps/child</app-path><propagate-configuration/>"
        "<configuration><property><name>input.dir</name><value>${wf:id()}/out</value></property></configuration>"
        "</sub-workflow>"
    )
    node = parse_workflow(workflow(f'<action name="a">{sub}<ok to="end"/><error to="fail"/></action>')).nodes["a"]
    assert node.action_type == "sub-workflow"
    assert node.spec == {
        "app_path": "${nameNode}/apps/child", "propagate_configuration": True,
        "configuration": {"input.dir": "${wf:id()}/out"},
    }


def test_celery_spec_shape():
    """celery (our uri:oozie:celery-action:0.1): task, positional args, keyword args."""
    inner = '<arg>1</arg><arg>${x}</arg><kwarg name="day">${wf:conf("day")}</kwarg><kwarg name="n">3</kwarg>'
    node = parse_workflow(workflow(celery_action("a", task="pipeline.tasks.load", inner=inner))).nodes["a"]
    assert node.action_type == "celery"
    assert node.spec == {
        "task": "pipeline.tasks.load", "args": ["1", "${x}"], "kwargs": {"day": '${wf:conf("day")}', "n": "3"},
        "configuration": {},
    }


def test_celery_prepare_and_duplicate_kwarg():
    """A celery action may prepare paths; a kwarg given twice is refused naming it."""
    xml = workflow(f'<action name="a"><celery xmlns="{CELERY}"><prepare><mkdir path="/p"/></prepare><task>t</task>'
                   '</celery><ok to="end"/><error to="fail"/></action>')
    assert parse_workflow(xml).nodes["a"].spec["prepare"] == [{"op": "mkdir", "path": "/p"}]
    error = refused(workflow(celery_action("a", inner='<kwarg name="k">1</kwarg><kwarg name="k">2</kwarg>')))
    assert error.reason == "action node 'a': kwarg 'k' is given twice"


def test_celery_schema_is_enforced():
    """Our celery XSD: a task is required, kwarg names are identifiers."""
    error = refused(workflow(celery_action("a", task="", inner="").replace("<task></task>", "")), SchemaValidationError)
    assert "Expected is one of ( celery-action:prepare, celery-action:configuration, celery-action:task )" in error.reason
    error = refused(workflow(celery_action("a", inner='<kwarg name="1bad">x</kwarg>')), SchemaValidationError)
    assert error.element == "kwarg"


def test_retry_attributes():
    """retry-max / retry-interval (spec 18) are read; absent, no retry and 10 minutes."""
    wf = parse_workflow(workflow(fs_action("a", attrs=' retry-max="3" retry-interval="5" retry-policy="exponential"', ok="b") + fs_action("b")))
    assert (wf.nodes["a"].retry_max, wf.nodes["a"].retry_interval) == (3, 5)
    assert (wf.nodes["b"].retry_max, wf.nodes["b"].retry_interval) == (0, 10)
    error = refused(workflow(fs_action("a", attrs=' retry-max="three"')))
    assert error.reason == "action node 'a': retry-max 'three' is not a non-negative integer"


def test_hadoop_only_elements_are_accepted():
    """credentials, global job-tracker/name-node/job-xml/launcher, sla:info are accepted and ignored."""
    head = (
        "<global><resource-manager>rm</resource-manager><name-node>nn</name-node>"
        "<launcher><memory.mb>512</memory.mb></launcher><job-xml>g.xml</job-xml>"
        "<configuration><property><name>queue</name><value>q</value></property></configuration></global>"
        '<credentials><credential name="hc" type="hcat"><property><name>a</name><value>b</value></property></credential></credentials>'
    )
    sla = ('<sla:info xmlns:sla="uri:oozie:sla:0.2"><sla:nominal-time>2020-01-01T00:00Z</sla:nominal-time>'
           "<sla:should-end>${10 * MINUTES}</sla:should-end></sla:info>")
    body = f'<action name="a" cred="hc"><fs><mkdir path="/x"/></fs><ok to="end"/><error to="fail"/>{sla}</action>'
    app = parse_workflow_app(workflow(body, head=head))
    assert dict(app.global_configuration) == {"queue": "q"}
    assert app.definition.nodes["a"].spec == {"operations": [{"op": "mkdir", "path": "/x"}], "configuration": {}}


def test_parameters_section():
    """<parameters>: a property without <value> is required, with one it has a default."""
    head = "<parameters><property><name>inputDir</name></property><property><name>outputDir</name><value>out-dir</value></property></parameters>"
    app = parse_workflow_app(workflow(fs_action("a"), head=head))
    assert [(p.name, p.default) for p in app.parameters] == [("inputDir", None), ("outputDir", "out-dir")]


# --- schemas -------------------------------------------------------------------------------------


@pytest.mark.parametrize("ns", [
    "uri:oozie:workflow:0.1", "uri:oozie:workflow:0.2", "uri:oozie:workflow:0.2.5", "uri:oozie:workflow:0.3",
    "uri:oozie:workflow:0.4", "uri:oozie:workflow:0.4.5", "uri:oozie:workflow:0.5", "uri:oozie:workflow:1.0",
])
def test_every_workflow_schema_version(ns):
    """Each Oozie workflow schema validates with its own XSD; the namespace is kept."""
    wf = parse_workflow(workflow(fs_action("a", ops='<delete path="/d"/><mkdir path="/m"/>'), ns=ns))
    assert wf.schema == ns
    assert wf.nodes["a"].spec["operations"] == [{"op": "delete", "path": "/d"}, {"op": "mkdir", "path": "/m"}]


def test_older_schema_refuses_what_it_did_not_have():
    """0.3 has no <global> (0.4 added it): refused as Oozie's XSD refuses it."""
    head = "<global><configuration><property><name>a</name><value>b</value></property></configuration></global>"
    assert parse_workflow_app(workflow(fs_action("a"), ns="uri:oozie:workflow:0.4", head=head)).global_configuration == {"a": "b"}
    error = refused(workflow(fs_action("a"), ns="uri:oozie:workflow:0.3", head=head), SchemaValidationError)
    assert error.reason.startswith("invalid for uri:oozie:workflow:0.3: Element 'global': This element is not expected.")


def test_unknown_namespace_refused():
    """A root outside the workflow schemas is refused naming the namespace."""
    error = refused(workflow(fs_action("a"), ns="uri:oozie:workflow:9.9"), UnsupportedNamespaceError)
    assert error.reason.startswith("namespace 'uri:oozie:workflow:9.9' is not a workflow schema; supported: uri:oozie:workflow:0.1")
    error = refused('<coordinator-app xmlns="uri:oozie:workflow:1.0" name="x"/>', UnsupportedNamespaceError)
    assert error.reason.startswith("the root element must be <workflow-app>, not <coordinator-app>")


def test_schema_error_is_one_line_with_line_number():
    """An XSD violation names the element and its line."""
    xml = workflow('<action name="a">\n<fs><mkdir/></fs><ok to="end"/><error to="fail"/></action>')
    error = refused(xml, SchemaValidationError)
    assert error.line == 2 and error.element == "mkdir"
    assert error.reason == "invalid for uri:oozie:workflow:1.0: Element 'mkdir': The attribute 'path' is required but missing."


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("element", [
    "<map-reduce><job-tracker>jt</job-tracker><name-node>nn</name-node></map-reduce>",
    "<pig><job-tracker>jt</job-tracker><name-node>nn</name-node><script>a.pig</script></pig>",
    "<java><job-tracker>jt</job-tracker><name-node>nn</name-node><main-class>Main</main-class></java>",
    '<hive xmlns="uri:oozie:hive-action:0.5"><script>q.sql</script></hive>',
    '<spark xmlns="uri:oozie:spark-action:1.0"><master>yarn</master><name>s</name><jar>a.jar</jar></spark>',
    '<sqoop xmlns="uri:oozie:sqoop-action:1.0"><command>import</command></sqoop>',
], ids=["map-reduce", "pig", "java", "hive", "spark", "sqoop"])
def test_hadoop_action_refused_naming_node_and_type(element):
    """Hadoop actions without a site action type are refused at submission naming the node, the type and the extension point."""
    kind = element[1:].split(" ")[0].split(">")[0]
    error = refused(workflow(f'<action name="bigjob"><{element[1:]}<ok to="end"/><error to="fail"/></action>'), UnsupportedActionError)
    assert error.reason.startswith(f"action node 'bigjob': action type {kind!r}")
    assert ("is not supported (Hadoop actions are not supported; supported: fs, shell, email, sub-workflow, celery, "
            "distcp, ssh; a site adds an action type with an executor class and its XSD registered for the namespace "
            "in WORKFLOW_ACTION_TYPES: see 'Site action types' in docs/workflows.md)") in error.reason
    assert "\n" not in error.reason
    assert error.element == "action"


def test_unknown_custom_action_refused():
    """Any other custom action element is refused the same way."""
    error = refused(workflow('<action name="x"><foo xmlns="urn:foo"/><ok to="end"/><error to="fail"/></action>'), UnsupportedActionError)
    assert error.reason.startswith(
        "action node 'x': action type 'foo' (urn:foo) is not supported (it is not supported; "
        "supported: fs, shell, email, sub-workflow, celery, distcp, ssh; a site adds an action type"
    )


def test_extension_action_without_its_namespace():
    """<shell> in the workflow namespace (xmlns forgotten) is refused saying which namespaces it needs."""
    body = '<action name="sh"><shell><exec>x</exec></shell><ok to="end"/><error to="fail"/></action>'
    error = refused(workflow(body, start="sh"), UnsupportedActionError)
    assert error.reason == (
        "action node 'sh': <shell> must be in one of the namespaces uri:oozie:shell-action:0.1, "
        "uri:oozie:shell-action:0.2, uri:oozie:shell-action:0.3, uri:oozie:shell-action:1.0, "
        "not 'uri:oozie:workflow:1.0'"
    )


def test_spec_fork_join_example_as_written_is_refused_for_map_reduce():
    """Appendix B's example uses map-reduce: refused naming its first action."""
    error = refused(SPEC_EXAMPLE, UnsupportedActionError)
    assert error.reason.startswith("action node 'firstjob': action type 'map-reduce' is not supported")


def test_spec_fork_join_example_with_shell_actions_is_accepted():
    """The spec's fork/join example (Appendix B, 3.1.5), its actions as shell, passes every check."""
    xml = SPEC_EXAMPLE.replace("<map-reduce>", f'<shell xmlns="{SHELL_1_0}">').replace(
        "</configuration>\n        </map-reduce>", "</configuration><exec>run.sh</exec></shell>"
    )
    wf = parse_workflow(xml)
    assert dict(wf.forks) == {"fork": "join"}
    assert wf.start == "firstjob"
    assert [n.name for n in wf.nodes.values()] == [
        START_NODE, "firstjob", "fork", "secondjob", "thirdjob", "join", "finaljob", "kill", "end",
    ]
    assert wf.nodes["secondjob"].spec["configuration"]["mapred.output.dir"] == "/usr/foo/${wf:id()}/temp2"


def test_too_many_nodes_refused():
    """A 10,000-node document is refused with one line, before schema or graph work."""
    body = "".join(fs_action(f"n{i}", ok=f"n{i + 1}") for i in range(10_000))
    error = refused(workflow(body, start="n0"), TooManyNodesError)
    assert error.reason == f"workflow has 10003 nodes; at most {MAX_NODES} are accepted"


def test_longest_accepted_chain_has_no_recursion_problem():
    """A chain of MAX_NODES nodes (deeper than Python's recursion limit) is accepted."""
    count = MAX_NODES - 3  # start, kill and end complete it
    body = "".join(fs_action(f"n{i}", ok=f"n{i + 1}" if i + 1 < count else "end") for i in range(count))
    wf = parse_workflow(workflow(body, start="n0"))
    assert len(wf.nodes) == MAX_NODES


@pytest.mark.parametrize("document", [
    '<?xml version="1.0"?><!DOCTYPE w [<!ENTITY x "boom">]><workflow-app name="&x;" xmlns="uri:oozie:workflow:1.0"/>',
    '<!DOCTYPE workflow-app SYSTEM "http://evil.example/w.dtd"><workflow-app xmlns="uri:oozie:workflow:1.0"/>',
], ids=["entity", "external-dtd"])
def test_doctype_and_entities_refused(document):
    """DOCTYPE and ENTITY declarations are refused before parsing."""
    error = refused(document, UnsafeXMLError)
    assert error.reason == "DOCTYPE and ENTITY declarations are not allowed"


def test_malformed_xml_refused():
    """Malformed XML is refused with the parser's reason and line."""
    error = refused('<workflow-app name="w" xmlns="uri:oozie:workflow:1.0">\n<start to="a">\n</workflow-app>', MalformedXMLError)
    assert error.reason.startswith("malformed XML: Opening and ending tag mismatch: start")
    assert error.line == 3


SPEC_EXAMPLE = """<workflow-app name='example-forkjoinwf' xmlns="uri:oozie:workflow:1.0">
    <start to='firstjob' />
    <action name="firstjob">
        <map-reduce>
            <resource-manager>${resourcemanager}</resource-manager>
            <name-node>${namenode}</name-node>
            <configuration>
                <property><name>mapred.input.dir</name><value>${input}</value></property>
                <property><name>mapred.output.dir</name><value>/usr/foo/${wf:id()}/temp1</value></property>
            </configuration>
        </map-reduce>
        <ok to="fork" />
        <error to="kill" />
    </action>
    <fork name='fork'>
        <path start='secondjob' />
        <path start='thirdjob' />
    </fork>
    <action name="secondjob">
        <map-reduce>
            <resource-manager>${resourcemanager}</resource-manager>
            <name-node>${namenode}</name-node>
            <configuration>
                <property><name>mapred.input.dir</name><value>/usr/foo/${wf:id()}/temp1</value></property>
                <property><name>mapred.output.dir</name><value>/usr/foo/${wf:id()}/temp2</value></property>
            </configuration>
        </map-reduce>
        <ok to="join" />
        <error to="kill" />
    </action>
    <action name="thirdjob">
        <map-reduce>
            <resource-manager>${resourcemanager}</resource-manager>
            <name-node>${namenode}</name-node>
            <configuration>
                <property><name>mapred.input.dir</name><value>/usr/foo/${wf:id()}/temp1</value></property>
                <property><name>mapred.output.dir</name><value>/usr/foo/${wf:id()}/temp3</value></property>
            </configuration>
        </map-reduce>
        <ok to="join" />
        <error to="kill" />
    </action>
    <join name='join' to='finaljob'/>
    <action name="finaljob">
        <map-reduce>
            <resource-manager>${resourcemanager}</resource-manager>
            <name-node>${namenode}</name-node>
            <configuration>
                <property><name>mapred.input.dir</name><value>/usr/foo/${wf:id()}/temp2,/usr/foo/${wf:id()}/temp3</value></property>
                <property><name>mapred.output.dir</name><value>${output}</value></property>
            </configuration>
        </map-reduce>
        <ok to="end" />
        <error to="kill" />
    </action>
    <kill name="kill">
        <message>Map/Reduce failed, error message[${wf:errorMessage(wf:lastErrorNode())}]</message>
    </kill>
    <end name='end'/>
</workflow-app>
"""  # Appendix B, with its typos fixed ('finalejob', a second <ok> for <error>) and fewer properties
