"""A site action type for the tests (the example of docs/workflows.md): `<echo>` logs its message, maybe waits, maybe fails."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from lxml import etree

from workflows.actions.base import OK, ActionContext, ActionResult, error
from workflows.actions.site import SiteAction, child_text, has_child, refuse

log = logging.getLogger(__name__)
KILLED: list[tuple[str, str]] = []  # (workflow, node) of every kill, for the tests to read


class EchoAction(SiteAction):
    """<echo xmlns="uri:custom:echo-action:0.1"><message>...</message><wait-seconds>n</wait-seconds><fail/></echo>."""

    action_type = "echo"
    schemas = {"uri:custom:echo-action:0.1": "xsd/echo-action-0.1.xsd"}
    configurable = True

    def __init__(self) -> None:
        self._stops: dict[tuple[str, str], threading.Event] = {}

    def parse(self, element: etree._Element, *, node: str, source: str) -> dict[str, Any]:
        """{"message": str, "wait": str, "fail": bool}; a literal wait that is not a number is refused."""
        wait = child_text(element, "wait-seconds") or "0"
        if wait == "crash":
            raise KeyError("a bug in the site's parse")
        if "${" not in wait and not wait.replace(".", "", 1).isdigit():
            raise refuse(element, node, source, f"echo wait-seconds {wait!r} is not a number")
        return {"message": child_text(element, "message"), "wait": wait, "fail": has_child(element, "fail")}

    def execute(self, spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
        """Log the message; wait (until killed); OK with {"said": message} or ERROR ECHO_FAILED."""
        stop = self._stops.setdefault((context.workflow_id, context.node_name), threading.Event())
        log.warning("echo says: %s (greeting %s)", spec["message"], context.configuration.get("greeting", "-"))
        stop.wait(float(spec["wait"]))
        self._stops.pop((context.workflow_id, context.node_name), None)
        if spec["fail"]:
            return error("ECHO_FAILED", f"echo was told to fail: {spec['message']}")
        return ActionResult(OK, data={"said": str(spec["message"])})

    def kill(self, spec: Mapping[str, Any], context: ActionContext) -> None:
        """Stop the wait."""
        KILLED.append((context.workflow_id, context.node_name))
        stop = self._stops.get((context.workflow_id, context.node_name))
        if stop is not None:
            stop.set()
