"""Checks of a workflow DAG, as Oozie's LiteWorkflowValidator makes them, without recursion.

Order and rules follow Oozie (messages are ours, one line, naming the nodes):

1. every transition names a node (E0708); Oozie checks only what start reaches, we check every node;
2. no cycle (spec 2.1, E0707), over every node;
3. as many forks as joins among the nodes start reaches (E0730);
4. fork/join pairing (validateForkJoin): a fork's paths all meet at one join (E0733, E0757), a join
   belongs to one fork (E0742, E0758), no `end` between a fork and its join (E0737), a fork does not
   start two paths at the same node unless it is a join or kill (E0744), and no node is reached by
   two "ok" paths unless both come through the same chain of decisions (E0743).

Nodes start does not reach are accepted, as Oozie accepts them (they never run).
Walks use explicit stacks: a 2,000-node chain must not hit Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping

from workflows.definitions.errors import WorkflowGraphError
from workflows.definitions.model import NodeDef

START_NODE = ":start:"  # Oozie's name for the start node (StartNodeDef.START); XML names cannot clash with it

_Visit = Generator[tuple[str, str | None, str | None, bool], None, None]


def _shown(name: str) -> str:
    return "<start>" if name == START_NODE else repr(name)


class _Checker:
    """One validation run: the nodes, where each was written, and the source for errors."""

    def __init__(self, nodes: Mapping[str, NodeDef], lines: Mapping[str, int | None], source: str) -> None:
        self.nodes = nodes
        self.lines = lines
        self.source = source

    def fail(self, node: str, message: str) -> WorkflowGraphError:
        kind = self.nodes[node].kind if node in self.nodes else None
        return WorkflowGraphError(message, source=self.source, line=self.lines.get(node), element=kind)

    def transitions_exist(self) -> None:
        for node in self.nodes.values():
            for target in node.transitions():
                if target not in self.nodes:
                    raise self.fail(
                        node.name, f"node {_shown(node.name)}: transition to {target!r}, which is not a node of this workflow"
                    )

    def reachable(self) -> list[str]:
        """Nodes start reaches, depth first; raises on the first cycle found (naming its path)."""
        order: list[str] = []
        done: set[str] = set()
        for root in [START_NODE, *self.nodes]:
            if root in done:
                continue
            on_path: dict[str, int] = {root: 0}
            path = [root]
            stack = [iter(self.nodes[root].transitions())]
            while stack:
                target = next(stack[-1], None)
                if target is None:
                    stack.pop()
                    finished = path.pop()
                    del on_path[finished]
                    done.add(finished)
                    if root == START_NODE:
                        order.append(finished)
                    continue
                if target in on_path:
                    cycle = [*path[on_path[target]:], target]
                    raise self.fail(
                        target,
                        f"cycle detected at node {_shown(target)}: {' -> '.join(cycle)} "
                        "(a workflow must be a DAG, spec 2.1)",
                    )
                if target in done:
                    continue
                on_path[target] = len(path)
                path.append(target)
                stack.append(iter(self.nodes[target].transitions()))
        return order

    def fork_join_counts(self, reached: list[str]) -> None:
        forks = [n for n in reached if self.nodes[n].kind == "fork"]
        joins = [n for n in reached if self.nodes[n].kind == "join"]
        if len(forks) != len(joins):
            anchor = (forks or joins)[0]
            raise self.fail(
                anchor, f"forks and joins are not in pairs: {len(forks)} fork(s) ({', '.join(forks) or '-'}), "
                f"{len(joins)} join(s) ({', '.join(joins) or '-'})",
            )

    def fork_joins(self) -> dict[str, str]:
        """Oozie's validateForkJoin as a trampoline of generators; returns fork -> join."""
        join_fork: dict[str, str] = {}
        decision_parents: dict[str, str | None] = {}
        visited: set[str] = set()
        path: list[str] = []
        nodes = self.nodes

        def visit(name: str, fork: str | None, top_decision: str | None, ok_path: bool) -> _Visit:
            node = nodes[name]
            path.append(name)
            if ok_path and node.kind not in ("kill", "join", "end"):
                if name not in decision_parents:
                    decision_parents[name] = top_decision
                elif top_decision is None or decision_parents[name] != top_decision:
                    raise self.fail(
                        name, f"node {name!r} is reached by more than one 'ok' path; only one path may lead "
                        "to a node, except through the same decision",
                    )
            if name in visited:
                path.remove(name)
                return
            if node.kind not in ("join", "end"):
                visited.add(name)
            if node.kind == "fork":
                for target in node.to:
                    if nodes[target].kind not in ("join", "kill") and node.to.count(target) > 1:
                        raise self.fail(name, f"fork {name!r} starts more than one path at node {target!r}")
                for target in node.to:
                    yield target, name, top_decision, ok_path
                joins = sorted(join for join, owner in join_fork.items() if owner == name)
                if not joins:
                    raise self.fail(name, f"fork {name!r} has no join: its paths must meet at one join node")
                if len(joins) > 1:
                    raise self.fail(name, f"fork {name!r} has several joins: {', '.join(joins)}; its paths must meet at one")
                yield nodes[joins[0]].to[0], fork, top_decision, ok_path
            elif node.kind == "join":
                if fork is None:
                    raise self.fail(name, f"join {name!r} has no fork to pair with")
                owner = join_fork.setdefault(name, fork)
                if owner != fork:
                    raise self.fail(name, f"join {name!r} is reached from two forks: {owner}, {fork}")
            elif node.kind == "decision":
                parent = top_decision if top_decision is not None else name
                for target in node.transitions():
                    yield target, fork, parent, ok_path
            elif node.kind == "end":
                if fork is not None:
                    previous = path[-2] if len(path) > 1 else name
                    raise self.fail(
                        previous, f"transition from {_shown(previous)} to end node {name!r} inside fork {fork!r}: "
                        "a path of a fork must reach its join (or a kill node)",
                    )
            elif node.kind == "action":
                yield node.to[0], fork, top_decision, ok_path
                yield node.error_to, fork, top_decision, False
            elif node.kind == "start":
                yield node.to[0], fork, top_decision, ok_path
            path.remove(name)

        stack = [visit(START_NODE, None, None, True)]
        while stack:
            call = next(stack[-1], None)
            if call is None:
                stack.pop()
            else:
                stack.append(visit(*call))
        return {fork: join for join, fork in sorted(join_fork.items(), key=lambda item: item[1])}


def check_graph(nodes: Mapping[str, NodeDef], lines: Mapping[str, int | None], source: str) -> dict[str, str]:
    """Refuse a DAG Oozie would refuse (WorkflowGraphError, one line); return each fork's join."""
    checker = _Checker(nodes, lines, source)
    checker.transitions_exist()
    reached = checker.reachable()
    checker.fork_join_counts(reached)
    return checker.fork_joins()
