"""Coordinator and bundle definitions: hardened XML parsing and XSD validation (pure: no Django)."""

from __future__ import annotations

from coordinators.definitions.config import (
    load_configuration,
    parse_hadoop_configuration,
    parse_properties,
    serialize_hadoop_configuration,
)
from coordinators.definitions.errors import DefinitionError
from coordinators.definitions.model import (
    Action,
    Controls,
    CoordinatorApp,
    DataIn,
    DataOut,
    Dataset,
    Parameter,
    SLAInfo,
)
from coordinators.definitions.parser import fsspec_loader, merge_parameters, parse_coordinator
from coordinators.definitions.schemas import supported_namespaces, validate
from coordinators.definitions.xmlsafe import parse_xml

__all__ = [
    "Action",
    "Controls",
    "CoordinatorApp",
    "DataIn",
    "DataOut",
    "Dataset",
    "DefinitionError",
    "Parameter",
    "SLAInfo",
    "fsspec_loader",
    "load_configuration",
    "merge_parameters",
    "parse_coordinator",
    "parse_hadoop_configuration",
    "parse_properties",
    "parse_xml",
    "serialize_hadoop_configuration",
    "supported_namespaces",
    "validate",
]
