"""Coordinator definitions: hardened XML parsing, XSD validation, job configuration (pure: no Django)."""

from __future__ import annotations

from oozie.definitions.config import (
    load_config,
    load_configuration,
    parse_hadoop_configuration,
    parse_properties,
    serialize_hadoop_configuration,
)
from oozie.definitions.errors import (
    ApplicationNotFoundError,
    ApplicationUnreadableError,
    ConfigurationError,
    DatasetCollisionError,
    DefinitionError,
    DocumentTooLargeError,
    DuplicateEventError,
    IncludeError,
    MalformedXMLError,
    MissingParameterError,
    SchemaValidationError,
    UndefinedDatasetError,
    UnsafeXMLError,
    UnsupportedFeatureError,
    UnsupportedNamespaceError,
)
from oozie.definitions.includes import Loader, fsspec_loader
from oozie.definitions.model import (
    DEFAULT_DONE_FLAG,
    Action,
    Controls,
    CoordinatorApp,
    DataIn,
    DataOut,
    Dataset,
    LogicNode,
    Parameter,
    SLAInfo,
)
from oozie.definitions.parser import merge_parameters, parse_coordinator
from oozie.definitions.schemas import supported_namespaces, validate
from oozie.definitions.xmlsafe import parse_xml

__all__ = [
    "DEFAULT_DONE_FLAG",
    "Action",
    "ApplicationNotFoundError",
    "ApplicationUnreadableError",
    "ConfigurationError",
    "Controls",
    "CoordinatorApp",
    "DataIn",
    "DataOut",
    "Dataset",
    "DatasetCollisionError",
    "DefinitionError",
    "DocumentTooLargeError",
    "DuplicateEventError",
    "IncludeError",
    "Loader",
    "LogicNode",
    "MalformedXMLError",
    "MissingParameterError",
    "Parameter",
    "SLAInfo",
    "SchemaValidationError",
    "UndefinedDatasetError",
    "UnsafeXMLError",
    "UnsupportedFeatureError",
    "UnsupportedNamespaceError",
    "fsspec_loader",
    "load_config",
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
