"""XSD validation of workflow documents (workflow 0.1-1.0 and the action extensions), from packaged files only."""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from lxml import etree

from oozie.definitions.errors import SchemaValidationError, UnsupportedNamespaceError
from oozie.definitions.schemas import SLA_SCHEMAS, compile_imports
from oozie.definitions.schemas import XSD_DIR as COORDINATOR_XSD_DIR
from oozie.definitions.xmlsafe import local_name, namespace_of, source_line
from workflows.definitions.extensions import Extensions

XSD_DIR = Path(__file__).resolve().parent / "xsd"
WORKFLOW_VERSIONS = ("0.1", "0.2", "0.2.5", "0.3", "0.4", "0.4.5", "0.5", "1.0")
WORKFLOW_SCHEMAS = {f"uri:oozie:workflow:{v}": f"oozie-workflow-{v}.xsd" for v in WORKFLOW_VERSIONS}
#: Action extensions by namespace: (action element, XSD file).
EXTENSION_SCHEMAS = {
    **{f"uri:oozie:shell-action:{v}": ("shell", f"shell-action-{v}.xsd") for v in ("0.1", "0.2", "0.3", "1.0")},
    **{f"uri:oozie:email-action:{v}": ("email", f"email-action-{v}.xsd") for v in ("0.1", "0.2")},
    "uri:oozie:celery-action:0.1": ("celery", "celery-action-0.1.xsd"),
}
_INCLUDED = ("oozie-common-1.0.xsd",)  # pulled in by <xs:include> (chameleon), never imported on its own
_LOCAL_SCHEME = "oozie-xsd:"
_ELEMENT = re.compile(r"Element '(?:\{([^}]*)\})?([^']+)'")
_NAMESPACE = re.compile(r"\{uri:oozie:([a-z-]+):[0-9.]+\}")
_LOCK = threading.Lock()  # a compiled schema's error log is shared: validate one document at a time


#: (namespace, XSD file) of each site action type's schema (workflows.actions.site), in a hashable form.
SiteSchemas = tuple[tuple[str, str], ...]


def site_schemas(extensions: Extensions) -> SiteSchemas:
    """The XSD files of the registered site action types, by namespace, sorted (a cache key)."""
    return tuple(sorted((ns, str(Path(ext.schemas[ns]).resolve())) for ns, ext in extensions.items()))


def _packaged(site: SiteSchemas = ()) -> dict[str, Path]:
    """Every XSD file the resolver may serve, by file name (a packaged name wins over a site file's)."""
    files = {Path(path).name: Path(path) for _, path in site}
    files.update({name: XSD_DIR / name for name in WORKFLOW_SCHEMAS.values()})
    files.update({name: XSD_DIR / name for _, name in EXTENSION_SCHEMAS.values()})
    files.update({name: XSD_DIR / name for name in _INCLUDED})
    files.update({name: COORDINATOR_XSD_DIR / name for name in SLA_SCHEMAS.values()})
    return files


class _LocalResolver(etree.Resolver):
    """Serve packaged and site XSDs by file name (imports and relative includes); every other location is empty."""

    def __init__(self, site: SiteSchemas = ()) -> None:
        super().__init__()
        self.files = _packaged(site)
        # Relative includes of a site XSD (oozie-common-1.0.xsd) come as URLs of its own directory.
        self.bases = (_LOCAL_SCHEME, XSD_DIR.as_uri(), *{Path(path).parent.as_uri() for _, path in site})

    def resolve(self, system_url: str | None, public_id: str | None, context: Any) -> Any:  # type: ignore[override]
        """The served file whose name ends the URL, else an empty document (no network, no other files)."""
        url = system_url or ""
        name = re.split(r"[/:]", url)[-1]
        path = self.files.get(name)
        if path is not None and url.startswith(self.bases):
            return self.resolve_string(path.read_bytes(), context, base_url=path.as_uri())
        return self.resolve_string(b"", context, base_url=_LOCAL_SCHEME)


@lru_cache(maxsize=8)
def _schema(site: SiteSchemas = ()) -> etree.XMLSchema:
    """One compiled schema holding every workflow version, action extension, site action type and SLA schema.

    The workflow XSDs accept custom actions through `<xs:any namespace="##other">` with strict
    processing, so an extension element is validated against its own schema here.
    """
    imports = [
        *WORKFLOW_SCHEMAS.items(),
        *((ns, name) for ns, (_, name) in EXTENSION_SCHEMAS.items()),
        *((ns, Path(path).name) for ns, path in site),
        *SLA_SCHEMAS.items(),
    ]

    return compile_imports(list(imports), _LocalResolver(site), _LOCAL_SCHEME)


def supported_namespaces() -> list[str]:
    """Every root namespace a workflow definition may use."""
    return list(WORKFLOW_SCHEMAS)


def check_namespace(root: etree._Element, source: str) -> str:
    """The root's namespace if it is a workflow schema, else UnsupportedNamespaceError."""
    namespace = namespace_of(root)
    if namespace not in WORKFLOW_SCHEMAS or local_name(root) != "workflow-app":
        if namespace in WORKFLOW_SCHEMAS:
            shown = f"the root element must be <workflow-app>, not <{local_name(root)}>"
        elif namespace:
            shown = f"namespace {namespace!r} is not a workflow schema"
        else:
            shown = "the root element has no namespace"
        raise UnsupportedNamespaceError(
            f"{shown}; supported: {', '.join(supported_namespaces())}",
            source=source, line=source_line(root), element=local_name(root),
        )
    return namespace


def validate(root: etree._Element, source: str = "<inline>", site: SiteSchemas = ()) -> str:
    """Validate against the XSD of the root's namespace (and each action's extension XSD); return the namespace."""
    namespace = check_namespace(root, source)
    schema = _schema(site)
    with _LOCK:
        if schema.validate(root):
            return namespace
        entries: list[Any] = list(schema.error_log)  # type: ignore[call-overload]
    error = entries[0] if entries else None
    message = str(error.message) if error is not None else "does not match the schema"
    named = _ELEMENT.search(message)
    element = named.group(2) if named else None
    message = _ELEMENT.sub(lambda m: f"Element '{m.group(2)}'", message)
    message = _NAMESPACE.sub(lambda m: "" if m.group(1) == "workflow" else f"{m.group(1)}:", message)
    message = " ".join(message.split())
    line = error.line if error is not None and isinstance(error.line, int) and error.line > 0 else None
    raise SchemaValidationError(f"invalid for {namespace}: {message}", source=source, line=line, element=element)
