"""Errors of definition parsing: each names the file, the line and the element."""

from __future__ import annotations


class DefinitionError(ValueError):
    """A coordinator definition or job configuration is refused (`source:line: <element>: reason`)."""

    def __init__(
        self,
        message: str,
        *,
        source: str = "<inline>",
        line: int | None = None,
        element: str | None = None,
    ) -> None:
        self.source = source or "<inline>"
        self.line = line
        self.element = element
        self.reason = message
        where = self.source + (f":{line}" if line is not None else "")
        what = f" <{element}>:" if element else ""
        super().__init__(f"{where}:{what} {message}")


class DocumentTooLargeError(DefinitionError):
    """A document exceeds the size limit (checked before parsing)."""


class UnsafeXMLError(DefinitionError):
    """A document declares a DOCTYPE, DTD or entities (XXE, billion laughs)."""


class MalformedXMLError(DefinitionError):
    """A document is not well-formed XML."""


class UnsupportedNamespaceError(DefinitionError):
    """The root element's namespace is not a supported Oozie schema."""


class SchemaValidationError(DefinitionError):
    """A document does not match its XSD."""


class IncludeError(DefinitionError):
    """A `<datasets><include>` cannot be resolved, read, or includes itself."""


class DatasetCollisionError(DefinitionError):
    """Two dataset definitions share a name where spec 10.1.1 forbids it."""


class UndefinedDatasetError(DefinitionError):
    """An input or output event names a dataset that is not defined."""


class DuplicateEventError(DefinitionError):
    """Two input/output events share a name."""


class UnsupportedFeatureError(DefinitionError):
    """A construct the engine does not implement (e.g. asynchronous datasets)."""


class ConfigurationError(DefinitionError):
    """A job configuration (.properties or Hadoop XML) is malformed."""


class ApplicationUnreadableError(DefinitionError):
    """An application's definition file exists but cannot be read: too large, not UTF-8, an I/O error (Oozie's E1001)."""


class ApplicationNotFoundError(DefinitionError):
    """An application path names nothing (`directory_exists` false) or a directory without its definition file."""

    def __init__(self, message: str, *, app_path: str, directory_exists: bool) -> None:
        self.app_path = app_path
        self.directory_exists = directory_exists
        super().__init__(message, source=app_path)


class MissingParameterError(DefinitionError):
    """Required `<parameters>` (no default) are not given by the job configuration."""

    def __init__(self, missing: tuple[str, ...], *, source: str = "<inline>", line: int | None = None) -> None:
        self.missing = missing
        super().__init__(
            f"required parameters not given: {', '.join(missing)}", source=source, line=line, element="parameters"
        )
