"""What the parser needs of a site action type (workflows.actions.site): its element, schemas and spec parser.

A site action type is registered by namespace (WORKFLOW_ACTION_TYPES); the parser validates
its element against the type's XSD together with the workflow and turns it into a spec with
the type's own `parse`. This module names that contract structurally, so the definitions
package keeps importing no Django (ADR 0021) and no executor.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from lxml import etree


class ActionExtension(Protocol):
    """An action type the workflow parser accepts beyond its own: what workflows.actions.site.SiteAction declares."""

    #: The action element's local name (`ssh`, `distcp`): also the node's action type.
    action_type: str
    #: Namespace -> its XSD file, for every namespace this type accepts.
    schemas: Mapping[str, str | Path]
    #: Whether the `<global>` configuration is merged under the element's own `<configuration>`.
    configurable: bool

    def parse(self, element: etree._Element, *, node: str, source: str) -> dict[str, Any]:
        """The node's spec (JSON: strings, lists, dicts, booleans, numbers; texts may hold `${...}`)."""
        ...


#: Namespace -> the site action type registered for it.
Extensions = Mapping[str, ActionExtension]
