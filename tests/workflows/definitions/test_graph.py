"""DAG checks as Oozie's LiteWorkflowValidator makes them: each refusal is one line naming the node."""

from __future__ import annotations

import pytest

from tests.workflows.definitions.helpers import fork_join, fs_action, workflow
from workflows.definitions import WorkflowGraphError, parse_workflow


def graph_error(body: str, start: str = "a") -> WorkflowGraphError:
    with pytest.raises(WorkflowGraphError) as caught:
        parse_workflow(workflow(body, start=start))
    assert "\n" not in str(caught.value)
    return caught.value


def test_transition_to_missing_node():
    """Every transition must name a node (E0708)."""
    error = graph_error(fs_action("a", ok="nowhere"))
    assert error.reason == "node 'a': transition to 'nowhere', which is not a node of this workflow"
    assert error.element == "action" and error.line == 1


def test_start_to_missing_node():
    """start's transition too."""
    error = graph_error(fs_action("a"), start="ghost")
    assert error.reason == "node <start>: transition to 'ghost', which is not a node of this workflow"


def test_duplicate_node_names():
    """Node names are unique (E0705)."""
    error = graph_error(fs_action("a") + fs_action("a"))
    assert error.reason == "node name 'a' is used by more than one node"


def test_duplicate_of_end_name():
    """An action may not reuse the end node's name."""
    error = graph_error(fs_action("a") + fs_action("end"))
    assert error.reason == "node name 'end' is used by more than one node"


def test_cycle_refused_naming_the_path():
    """A cycle is refused (spec 2.1), naming a node on it and the path."""
    error = graph_error(fs_action("a", ok="b") + fs_action("b", ok="c") + fs_action("c", ok="a"))
    assert error.reason == "cycle detected at node 'a': a -> b -> c -> a (a workflow must be a DAG, spec 2.1)"


def test_self_transition_refused():
    """A node may not lead to itself (E0706), here through its error transition."""
    error = graph_error(fs_action("a", error="a"))
    assert error.reason == "cycle detected at node 'a': a -> a (a workflow must be a DAG, spec 2.1)"


def test_cycle_among_unreachable_nodes_refused():
    """Cycles are refused even where start does not go (stricter than Oozie: the DAG is stored and drawn)."""
    error = graph_error(fs_action("a") + fs_action("x", ok="y") + fs_action("y", ok="x"))
    assert error.reason.startswith("cycle detected at node 'x': x -> y -> x")


def test_unreachable_node_accepted():
    """A node start never reaches is accepted, as Oozie accepts it (it never runs)."""
    wf = parse_workflow(workflow(fs_action("a") + fs_action("orphan")))
    assert "orphan" in wf.nodes


def test_fork_without_join():
    """Forks and joins are counted first (E0730)."""
    body = '<fork name="f"><path start="p1"/><path start="p2"/></fork>' + fs_action("p1") + fs_action("p2")
    error = graph_error(body, start="f")
    assert error.reason == "forks and joins are not in pairs: 1 fork(s) (f), 0 join(s) (-)"


def test_join_without_fork():
    """A join reached outside any fork (E0742), the fork/join counts being equal."""
    body = (
        fs_action("a", ok="k", error="g") + '<fork name="g"><path start="fail"/><path start="fail"/></fork>'
        + '<join name="k" to="f"/>' + fork_join(["p1", "p2"])
    )
    error = graph_error(body)
    assert error.reason == "join 'k' has no fork to pair with"


def test_fork_paths_meeting_at_two_joins():
    """All paths of a fork meet at one join (E0757)."""
    body = (
        '<fork name="f"><path start="p1"/><path start="p2"/></fork>' + fs_action("p1", ok="j1") + fs_action("p2", ok="j2")
        + '<join name="j1" to="h"/><join name="j2" to="end"/><fork name="h"><path start="fail"/><path start="fail"/></fork>'
    )
    error = graph_error(body, start="f")
    assert error.reason == "fork 'f' has several joins: j1, j2; its paths must meet at one"


def test_fork_paths_meeting_at_no_join():
    """A fork whose paths all end in kill nodes has no join (E0733)."""
    body = fs_action("a", ok="f", error="k") + '<fork name="f"><path start="fail"/><path start="fail"/></fork><join name="k" to="end"/>'
    error = graph_error(body)
    assert error.reason == "fork 'f' has no join: its paths must meet at one join node"


def test_end_inside_fork():
    """A path of a fork may not go to end (E0737)."""
    body = '<fork name="f"><path start="p1"/><path start="p2"/></fork>' + fs_action("p1", ok="j") + fs_action("p2", ok="end")
    body += '<join name="j" to="end"/>'
    error = graph_error(body, start="f")
    assert error.reason == (
        "transition from 'p2' to end node 'end' inside fork 'f': a path of a fork must reach its join (or a kill node)"
    )
    assert error.element == "action"


def test_join_reached_from_two_forks():
    """A join belongs to one fork (E0758)."""
    body = (
        '<fork name="f"><path start="p1"/><path start="g"/></fork>' + fs_action("p1", ok="j")
        + '<fork name="g"><path start="q1"/><path start="q2"/></fork>' + fs_action("q1", ok="j") + fs_action("q2", ok="j")
        + '<join name="j" to="other"/><join name="other" to="end"/>'
    )
    error = graph_error(body, start="f")
    assert error.reason == "join 'j' is reached from two forks: f, g"


def test_fork_starting_two_paths_at_one_node():
    """A fork may not start two paths at the same action (E0744)."""
    body = '<fork name="f"><path start="p1"/><path start="p1"/></fork>' + fs_action("p1", ok="j") + '<join name="j" to="end"/>'
    error = graph_error(body, start="f")
    assert error.reason == "fork 'f' starts more than one path at node 'p1'"


def test_two_ok_paths_to_one_node():
    """Two fork paths may not both lead, on 'ok', to the same action (E0743)."""
    body = (
        '<fork name="f"><path start="p1"/><path start="p2"/></fork>'
        + fs_action("p1", ok="shared") + fs_action("p2", ok="shared") + fs_action("shared", ok="j") + '<join name="j" to="end"/>'
    )
    error = graph_error(body, start="f")
    assert error.reason == (
        "node 'shared' is reached by more than one 'ok' path; only one path may lead to a node, except through the same decision"
    )


def test_decision_chain_to_one_node_is_accepted():
    """Oozie's D1 -> D2 -> A, D1 -> A: one path at run time, accepted."""
    body = (
        '<decision name="d1"><switch><case to="d2">${x}</case><default to="a"/></switch></decision>'
        '<decision name="d2"><switch><case to="a">${y}</case><default to="end"/></switch></decision>' + fs_action("a")
    )
    assert parse_workflow(workflow(body, start="d1")).nodes["d2"].kind == "decision"


def test_decision_inside_fork_to_join_or_kill_is_accepted():
    """A decision on a fork path may go to the join or to a kill node."""
    body = (
        '<fork name="f"><path start="d"/><path start="p2"/></fork>'
        '<decision name="d"><switch><case to="p1">${x}</case><case to="fail">${y}</case><default to="j"/></switch></decision>'
        + fs_action("p1", ok="j") + fs_action("p2", ok="j") + '<join name="j" to="end"/>'
    )
    assert dict(parse_workflow(workflow(body, start="f")).forks) == {"f": "j"}


def test_error_transitions_may_share_a_target():
    """Error paths ('not ok') may converge: every action of a fork can fail to the same cleanup."""
    body = (
        '<fork name="f"><path start="p1"/><path start="p2"/></fork>'
        + fs_action("p1", ok="j", error="cleanup") + fs_action("p2", ok="j", error="cleanup")
        + '<join name="j" to="end"/>' + fs_action("cleanup", ok="fail")
    )
    assert dict(parse_workflow(workflow(body, start="f")).forks) == {"f": "j"}


def test_wide_fork_accepted():
    """A 10-wide fork of actions and its join (the benchmark's shape)."""
    wf = parse_workflow(workflow(fork_join([f"p{i}" for i in range(10)]), start="f"))
    assert len(wf.nodes["f"].to) == 10 and dict(wf.forks) == {"f": "j"}
