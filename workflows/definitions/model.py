"""A workflow application as parsed and resolved at submission: plain data, stored with the job as JSON.

Shapes of `NodeDef.spec` per action type (strings may still hold `${...}` expressions that
call functions: those are evaluated when the node is launched, with the `wf:` state of that
moment; every variable was already checked at submission):

- fs:           {"operations": [{"op": "mkdir"|"delete"|"touchz", "path": str}
                                {"op": "move", "source": str, "target": str}
                                {"op": "chmod", "path": str, "permissions": str, "dir_files": bool, "recursive": bool}]}
- shell:        {"exec": str, "args": [str], "env": [str "NAME=value"], "capture_output": bool}
- email:        {"to": [str], "cc": [str], "bcc": [str], "subject": str, "body": str,
                 "content_type": str, "attachments": [str]}
- sub-workflow: {"app_path": str, "propagate_configuration": bool, "configuration": {str: str}}
- celery:       {"task": str, "args": [str], "kwargs": {str: str}}
- ssh:          {"host": str, "command": str, "args": [str], "arg": [str], "capture_output": bool}
- distcp:       {"args": [str]}
- a site type:  what its `parse` returns (workflows.actions.site; ssh and distcp are such types)

Every action spec may also carry "prepare": [{"op": "delete"|"mkdir", "path": str}] and
"configuration": {str: str} (the `<global>` configuration under the action's own).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CONTROL_KINDS = ("start", "end", "kill", "decision", "fork", "join")
ACTION_KIND = "action"
ACTION_TYPES = ("fs", "shell", "email", "sub-workflow", "celery")


@dataclass(frozen=True)
class NodeDef:
    """One node of the DAG.

    `to`: start -> (target,); join -> (target,); fork -> its paths, in document order;
    action -> (ok target,). Others have none. `error_to`: an action's error transition.
    """

    name: str
    kind: str  # one of CONTROL_KINDS or ACTION_KIND
    to: tuple[str, ...] = ()
    error_to: str = ""
    cases: tuple[tuple[str, str], ...] = ()  # decision: (predicate template, target), in order
    default: str = ""  # decision: the default target
    message: str = ""  # kill: the message template
    action_type: str = ""  # action: one of ACTION_TYPES or a site action type (workflows.actions.site)
    spec: Mapping[str, Any] = field(default_factory=dict)
    retry_max: int = 0  # user retry (spec 18): extra runs after an ERROR
    retry_interval: int = 10  # minutes between user retries

    def transitions(self) -> tuple[str, ...]:
        """Every node this one may lead to."""
        targets = [*self.to, *([self.error_to] if self.error_to else [])]
        targets += [target for _, target in self.cases] + ([self.default] if self.default else [])
        return tuple(dict.fromkeys(targets))

    def to_json(self) -> dict[str, Any]:
        """As stored."""
        return {
            "name": self.name, "kind": self.kind, "to": list(self.to), "error_to": self.error_to,
            "cases": [list(case) for case in self.cases], "default": self.default, "message": self.message,
            "action_type": self.action_type, "spec": dict(self.spec),
            "retry_max": self.retry_max, "retry_interval": self.retry_interval,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NodeDef:
        """As read back."""
        return cls(
            name=data["name"], kind=data["kind"], to=tuple(data.get("to", ())), error_to=data.get("error_to", ""),
            cases=tuple((str(p), str(t)) for p, t in data.get("cases", ())), default=data.get("default", ""),
            message=data.get("message", ""), action_type=data.get("action_type", ""), spec=data.get("spec", {}),
            retry_max=int(data.get("retry_max", 0)), retry_interval=int(data.get("retry_interval", 10)),
        )


@dataclass(frozen=True)
class WorkflowDefinition:
    """A validated workflow: its name, schema, start node, nodes by name, and each fork's join."""

    name: str
    schema: str  # the root namespace, e.g. uri:oozie:workflow:1.0
    start: str  # the node the start node leads to
    nodes: Mapping[str, NodeDef]
    forks: Mapping[str, str] = field(default_factory=dict)  # fork name -> its join's name

    def to_json(self) -> dict[str, Any]:
        """As stored on the workflow job."""
        return {
            "name": self.name, "schema": self.schema, "start": self.start,
            "nodes": [node.to_json() for node in self.nodes.values()], "forks": dict(self.forks),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkflowDefinition:
        """As read back from the workflow job."""
        nodes = [NodeDef.from_json(item) for item in data["nodes"]]
        return cls(
            name=data["name"], schema=data["schema"], start=data["start"],
            nodes={node.name: node for node in nodes}, forks=dict(data.get("forks", {})),
        )


@dataclass(frozen=True)
class PreparedWorkflow:
    """What a submission produced: the definition and the job's configuration (layered, variables resolved)."""

    definition: WorkflowDefinition
    configuration: Mapping[str, str]
    app_path: str
    xml: str  # the workflow.xml as submitted (shown by -definition)
