"""Coordinator and bundle definitions: hardened XML parsing and XSD validation (pure: no Django)."""

from __future__ import annotations

from coordinators.definitions.errors import DefinitionError
from coordinators.definitions.schemas import supported_namespaces, validate
from coordinators.definitions.xmlsafe import parse_xml

__all__ = ["DefinitionError", "parse_xml", "supported_namespaces", "validate"]
