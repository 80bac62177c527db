"""Dataset definitions: `<dataset>` extraction, `<include>` resolution and name collisions (spec 10.1.1)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from lxml import etree

from oozie.definitions.errors import (
    DatasetCollisionError,
    DefinitionError,
    DocumentTooLargeError,
    IncludeError,
    UnsupportedFeatureError,
)
from oozie.definitions.model import DEFAULT_DONE_FLAG, Dataset
from oozie.definitions.schemas import validate
from oozie.definitions.xmlsafe import (
    DEFAULT_MAX_BYTES,
    local_name,
    namespace_of,
    parse_xml,
    source_line,
)

Loader = Callable[[str], bytes]
EXPRESSION = re.compile(r"\$\{[^}]*\}?")
MAX_INCLUDE_DEPTH = 8
MAX_INCLUDE_FILES = 64


def fsspec_loader(max_bytes: int = DEFAULT_MAX_BYTES, allowed_protocols: Iterable[str] | None = None) -> Loader:
    """A loader reading a local path or fsspec URL (file://, memory://, hdfs://...) within a size limit."""
    allowed = None if allowed_protocols is None else frozenset(allowed_protocols)

    def load(url: str) -> bytes:
        # fsspec takes longer to import (~80 ms) than this whole package; callers injecting their own loader never need it.
        import fsspec  # noqa: PLC0415 - needed only by this default loader, not by the package
        from fsspec.core import split_protocol  # noqa: PLC0415 - needed only by this default loader

        protocol = split_protocol(url)[0] or "file"
        if allowed is not None and protocol not in allowed:
            raise IncludeError(f"protocol {protocol!r} is not allowed for {url!r}", source=url)
        with fsspec.open(url, "rb") as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise DocumentTooLargeError(f"{url} is larger than {max_bytes} bytes", source=url)
        return bytes(data)

    return load


def children(element: etree._Element, name: str) -> list[etree._Element]:
    """Child elements with this local name."""
    return [child for child in element if isinstance(child.tag, str) and local_name(child) == name]


def child(element: etree._Element | None, name: str) -> etree._Element | None:
    """The first child element with this local name, or None."""
    if element is None:
        return None
    found = children(element, name)
    return found[0] if found else None


def text(element: etree._Element | None) -> str | None:
    """An element's stripped text ('' when empty), None when the element is absent."""
    if element is None:
        return None
    return (element.text or "").strip()


def dataset_of(element: etree._Element, source: str) -> Dataset:
    """A `<dataset>` element as a Dataset."""
    done = child(element, "done-flag")
    return Dataset(
        name=element.get("name", ""),
        frequency=element.get("frequency", "").strip(),
        initial_instance=element.get("initial-instance", "").strip(),
        timezone=element.get("timezone", "").strip(),
        uri_template=text(child(element, "uri-template")) or "",
        done_flag=DEFAULT_DONE_FLAG if done is None else (text(done) or ""),
        source=source,
        line=source_line(element),
    )


def datasets_in(container: etree._Element, source: str, what: str) -> list[Dataset]:
    """The `<dataset>`s of one `<datasets>` element; two of the same name are a collision (10.1.1)."""
    for element in children(container, "async-dataset"):
        raise UnsupportedFeatureError(
            "asynchronous datasets are not supported (spec 6.4)", source=source, line=source_line(element), element="async-dataset"
        )
    found: dict[str, Dataset] = {}
    for element in children(container, "dataset"):
        dataset = dataset_of(element, source)
        if dataset.name in found:
            raise DatasetCollisionError(
                f"dataset {dataset.name!r} is defined twice in {what} (first on line {found[dataset.name].line})",
                source=source, line=dataset.line, element="dataset",
            )
        found[dataset.name] = dataset
    return list(found.values())


def resolve_href(href: str, base_dir: str | None) -> str:
    """An include location made absolute: URLs as they are, paths against the including file's directory."""
    if "://" in href:
        return href
    if href.startswith("/"):
        if base_dir is not None and "://" in base_dir:  # a bare absolute path stays on the base's filesystem
            parts = urlsplit(base_dir)
            return f"{parts.scheme}://{parts.netloc}{posixpath.normpath(href)}"
        return posixpath.normpath(href)
    if base_dir is None:
        raise ValueError(f"include {href!r} is relative but the application directory is unknown")
    if "://" in base_dir:  # join on the URL's path only: `..` never climbs into the host
        parts = urlsplit(base_dir)
        path = posixpath.normpath(posixpath.join(parts.path or "/", href))
        return f"{parts.scheme}://{parts.netloc}{path if path.startswith('/') else '/' + path}"
    return posixpath.normpath(posixpath.join(base_dir, href))


def _parent(url: str) -> str:
    return url.rsplit("/", 1)[0] if "/" in url else "."


def _adopt_namespace(root: etree._Element, namespace: str) -> None:
    """Spec 5.3: an included `<datasets>` may omit the namespace; it takes the coordinator's."""
    for element in root.iter():
        if isinstance(element.tag, str) and not namespace_of(element):
            element.tag = f"{{{namespace}}}{local_name(element)}"


@dataclass(slots=True)
class _Walk:
    """State of one include resolution: loader, namespace, files already read, datasets found."""

    loader: Loader
    namespace: str
    read: set[str]
    found: dict[str, Dataset]


def _include(walk: _Walk, include: etree._Element, source: str, base_dir: str | None, stack: tuple[str, ...]) -> None:
    """Read one `<include>`d file and, recursively, its own includes."""
    where = {"source": source, "line": source_line(include), "element": "include"}
    href = text(include) or ""
    if not href:
        raise IncludeError("an <include> is empty", **where)  # type: ignore[arg-type]
    if expressions := EXPRESSION.findall(href):
        # Includes are read while parsing, before job properties exist (ADR 0004): say so
        # rather than look for a file literally named `${...}`.
        raise IncludeError(
            f"include {href!r} uses {', '.join(expressions)}: include locations are read before job "
            "properties apply and cannot use variables; write the location out", **where,  # type: ignore[arg-type]
        )
    try:
        url = resolve_href(href, base_dir)
    except ValueError as exc:
        raise IncludeError(str(exc), **where) from None  # type: ignore[arg-type]
    if url in stack:
        raise IncludeError(f"include cycle: {' -> '.join((*stack[1:], url))} includes itself", **where)  # type: ignore[arg-type]
    if url in walk.read:
        return  # the same file reached twice (a diamond): its datasets are already in
    if len(stack) > MAX_INCLUDE_DEPTH or len(walk.read) >= MAX_INCLUDE_FILES:
        raise IncludeError(
            f"too many includes (depth {MAX_INCLUDE_DEPTH}, {MAX_INCLUDE_FILES} files at most)", **where  # type: ignore[arg-type]
        )
    walk.read.add(url)
    try:
        data = walk.loader(url)
    except DefinitionError:
        raise
    except Exception as exc:  # loaders raise whatever their filesystem raises
        raise IncludeError(f"cannot read include {url!r}: {type(exc).__name__}: {exc}", **where) from None  # type: ignore[arg-type]
    root = parse_xml(data, url)
    if local_name(root) != "datasets":
        raise IncludeError(
            f"an included file must be a <datasets> document, not <{local_name(root)}>",
            source=url, line=source_line(root), element=local_name(root),
        )
    if not namespace_of(root):
        _adopt_namespace(root, walk.namespace)
    elif namespace_of(root) != walk.namespace:
        raise IncludeError(
            f"included namespace {namespace_of(root)!r} differs from the coordinator's {walk.namespace!r}",
            source=url, line=source_line(root), element="datasets",
        )
    validate(root, url)
    for dataset in datasets_in(root, url, "one dataset definition file"):
        earlier = walk.found.get(dataset.name)
        if earlier is not None:
            raise DatasetCollisionError(
                f"dataset {dataset.name!r} is defined in two included files: {earlier.source} and {url}",
                source=url, line=dataset.line, element="dataset",
            )
        walk.found[dataset.name] = dataset
    for nested in children(root, "include"):
        _include(walk, nested, url, _parent(url), (*stack, url))


def resolve_datasets(
    datasets_element: etree._Element | None, source: str, namespace: str, app_dir: str | None, loader: Loader
) -> tuple[tuple[Dataset, ...], tuple[str, ...]]:
    """All datasets of a coordinator (embedded win over included) and the include hrefs as written."""
    if datasets_element is None:
        return (), ()
    embedded = {d.name: d for d in datasets_in(datasets_element, source, "the coordinator")}
    includes = children(datasets_element, "include")
    walk = _Walk(loader, namespace, set(), {})
    for include in includes:
        _include(walk, include, source, app_dir, (source,))
    merged = {name: embedded.get(name, dataset) for name, dataset in walk.found.items()}
    merged.update(embedded)
    return tuple(merged.values()), tuple(text(i) or "" for i in includes)
