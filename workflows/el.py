"""The workflow EL (spec 4.2): basic functions, `wf:` functions over the job's state, `fs:` functions over fsspec.

Expressions in a node (its spec, a decision's cases, a kill message) are evaluated when the
node runs, with the job's state of that moment (`WorkflowState`), on the safe EL engine of
oozie.el. Values Oozie leaves null (an unset property, a node that has not run) are
null here too: `${empty wf:errorCode('x')}` and `firstNotNull(wf:conf('x'), 'd')` behave as
in Oozie, and null prints as ''. `fs:` paths are limited as every storage path a workflow
touches is (workflows.actions.storage, ADR 0022).
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone

from datasets.timeline import format_datetime, resolve_timezone
from oozie.definitions import DefinitionError, serialize_hadoop_configuration
from oozie.el import (
    ELContext,
    ELEvaluationError,
    ELFunction,
    FunctionRegistry,
    Phase,
    evaluate_to_string,
    to_text,
)
from workflows.actions.data import properties_text
from workflows.actions.storage import Location, StorageError, expand, has_glob, locate

# Spec 4.2.1: byte constants (long).
CONSTANTS: dict[str, int] = {"KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4, "PB": 1024**5}


@dataclass(frozen=True)
class NodeState:
    """What the `wf:` functions know of one node that has run: its transition, error, external ids, data."""

    transition: str = ""
    error_code: str = ""
    error_message: str = ""
    external_id: str = ""
    external_status: str = ""
    data: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkflowState:
    """The workflow job as its expressions see it; `current_node` is the node being evaluated (wf:callback)."""

    id: str
    name: str
    app_path: str
    conf: Mapping[str, str]
    user: str
    group: str
    run: int
    callback_base: str
    last_error_node: str
    nodes: Mapping[str, NodeState]
    current_node: str = ""


def _state(ctx: ELContext) -> WorkflowState:
    state = ctx.extra.get("workflow")
    if not isinstance(state, WorkflowState):
        raise ELEvaluationError("wf: functions need a running workflow job")
    return state


def _or_null(value: str) -> str | None:
    return value or None


def _node(ctx: ELContext, name: Any) -> NodeState:
    return _state(ctx).nodes.get(to_text(name), NodeState())


# --- 4.2.2 basic functions ---------------------------------------------------------------------

def _text_or_null(value: Any) -> str | None:
    return None if value is None else to_text(value)


def _java_replacement(replacement: str) -> str:
    """Java's Matcher replacement syntax ($1, ${name}, \\$) as Python's (\\g<1>, \\g<name>, $)."""
    out: list[str] = []
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        if ch == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        if ch == "$":
            named = re.match(r"\{([A-Za-z][A-Za-z0-9]*)\}", replacement[i + 1:])
            number = re.match(r"[0-9]+", replacement[i + 1:])
            if named:
                out.append(f"\\g<{named.group(1)}>")
                i += 1 + len(named.group(0))
                continue
            if number:
                out.append(f"\\g<{number.group(0)}>")
                i += 1 + len(number.group(0))
                continue
            raise ELEvaluationError(f"replaceAll(): illegal group reference in {replacement!r}")
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


def _compile(regex: str, function: str) -> re.Pattern[str]:
    try:
        return re.compile(regex)
    except re.error as exc:
        raise ELEvaluationError(f"{function}(): bad regular expression {regex!r}: {exc}") from None


def _replace_all(ctx: ELContext, src: Any, regex: Any, replacement: Any) -> str | None:
    """Java's String.replaceAll; a null regex changes nothing, a null replacement is ''."""
    if src is None or regex is None:
        return _text_or_null(src)
    pattern = _compile(to_text(regex), "replaceAll")
    try:
        return pattern.sub(_java_replacement(to_text(replacement)), to_text(src))
    except (re.error, IndexError) as exc:
        raise ELEvaluationError(f"replaceAll(): {exc}") from None


def _java_split(src: str, delimiter: str) -> list[str]:
    """Java's String.split(regex): groups not kept, trailing empty strings dropped, no leading zero-width split."""
    parts: list[str] = []
    last = 0
    for match in _compile(delimiter, "appendAll").finditer(src):
        if match.end() == 0:
            continue
        parts.append(src[last:match.start()])
        last = match.end()
    parts.append(src[last:])
    if not src:
        return [""]
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _append_all(ctx: ELContext, src: Any, append: Any, delimiter: Any) -> str | None:
    """appendAll('/a/,/b/', 'X', ',') is '/a/X,/b/X' (spec 4.2.2); a null delimiter changes nothing."""
    if src is None or delimiter is None:
        return _text_or_null(src)
    text, suffix, separator = to_text(src), to_text(append), to_text(delimiter)
    return separator.join(part + suffix for part in _java_split(text, separator))


def _trim(ctx: ELContext, value: Any) -> str:
    """commons-lang trimToEmpty: control characters and blanks off both ends; null is ''."""
    return "" if value is None else to_text(value).strip("".join(chr(c) for c in range(33)))


def _url_encode(ctx: ELContext, value: Any) -> str:
    """java.net.URLEncoder in UTF-8: letters, digits and .-*_ kept, space as +."""
    if value is None:
        return ""
    return urllib.parse.quote_plus(to_text(value), safe="*").replace("~", "%7E")


def _timestamp(ctx: ELContext) -> str:
    """Now, as yyyy-MM-ddTHH:mmZ in the processing time zone."""
    zone = resolve_timezone(str(settings.OOZIE_PROCESSING_TIMEZONE))
    return format_datetime(timezone.now(), zone)


def _string_map(value: Any, function: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ELEvaluationError(f"{function}() takes a map, such as wf:actionData('node'), got {to_text(value)!r}")
    return {to_text(key): to_text(item) for key, item in value.items()}


def _to_json(ctx: ELContext, value: Any) -> str:
    return json.dumps(_string_map(value, "toJsonStr"), ensure_ascii=False, separators=(",", ":"))


def _to_properties(ctx: ELContext, value: Any) -> str:
    return properties_text(_string_map(value, "toPropertiesStr"))


def _to_configuration(ctx: ELContext, value: Any) -> str:
    try:
        return serialize_hadoop_configuration(_string_map(value, "toConfigurationStr")).decode("utf-8")
    except DefinitionError as exc:
        raise ELEvaluationError(f"toConfigurationStr(): {exc}") from None


BASIC = (
    ELFunction("firstNotNull", lambda ctx, a, b: a if a is not None else b, min_args=2, max_args=2),
    ELFunction("concat", lambda ctx, a, b: to_text(a) + to_text(b), min_args=2, max_args=2),
    ELFunction("replaceAll", _replace_all, min_args=3, max_args=3),
    ELFunction("appendAll", _append_all, min_args=3, max_args=3),
    ELFunction("trim", _trim, min_args=1, max_args=1),
    ELFunction("urlEncode", _url_encode, min_args=1, max_args=1),
    ELFunction("timestamp", _timestamp),
    ELFunction("toJsonStr", _to_json, min_args=1, max_args=1),
    ELFunction("toPropertiesStr", _to_properties, min_args=1, max_args=1),
    ELFunction("toConfigurationStr", _to_configuration, min_args=1, max_args=1),
)


# --- 4.2.3 workflow functions --------------------------------------------------------------------

def _callback(ctx: ELContext, state_var: Any) -> str:
    """Oozie's CallbackService URL: <base>?id=<action id>&status=<stateVar>."""
    state = _state(ctx)
    return f"{state.callback_base}?id={state.id}@{state.current_node}&status={to_text(state_var)}"


WORKFLOW = (
    ELFunction("wf:id", lambda ctx: _state(ctx).id),
    ELFunction("wf:name", lambda ctx: _state(ctx).name),
    ELFunction("wf:appPath", lambda ctx: _state(ctx).app_path),
    ELFunction("wf:conf", lambda ctx, name: _state(ctx).conf.get(to_text(name)), min_args=1, max_args=1),
    ELFunction("wf:user", lambda ctx: _state(ctx).user),
    ELFunction("wf:group", lambda ctx: _state(ctx).group),
    ELFunction("wf:callback", _callback, min_args=1, max_args=1),
    ELFunction("wf:transition", lambda ctx, node: _or_null(_node(ctx, node).transition), min_args=1, max_args=1),
    ELFunction("wf:lastErrorNode", lambda ctx: _or_null(_state(ctx).last_error_node)),
    ELFunction("wf:errorCode", lambda ctx, node: _or_null(_node(ctx, node).error_code), min_args=1, max_args=1),
    ELFunction("wf:errorMessage", lambda ctx, node: _or_null(_node(ctx, node).error_message), min_args=1, max_args=1),
    ELFunction("wf:run", lambda ctx: _state(ctx).run),
    ELFunction("wf:actionData", lambda ctx, node: dict(_node(ctx, node).data), min_args=1, max_args=1),
    ELFunction("wf:actionExternalId", lambda ctx, node: _or_null(_node(ctx, node).external_id), min_args=1, max_args=1),
    ELFunction(
        "wf:actionExternalStatus", lambda ctx, node: _or_null(_node(ctx, node).external_status), min_args=1, max_args=1
    ),
    ELFunction("wf:actionTrackerUri", lambda ctx, node: None, min_args=1, max_args=1),  # no job tracker here
)


# --- 4.2.7 file system functions -----------------------------------------------------------------

def _located(path: Any, function: str) -> Location:
    try:
        return locate(to_text(path))
    except StorageError as exc:
        raise ELEvaluationError(f"{function}(): {exc.message}") from None


def _storage_call(function: str, path: Any, body: Callable[[Location], Any]) -> Any:
    location = _located(path, function)
    try:
        return body(location)
    except StorageError as exc:
        raise ELEvaluationError(f"{function}(): {exc.message}") from None
    except OSError as exc:
        raise ELEvaluationError(f"{function}(): cannot read {location.url}: {exc}") from None


def _info(location: Location) -> dict[str, Any] | None:
    try:
        return dict(location.fs.info(location.path))
    except FileNotFoundError:
        return None


def _exists(location: Location) -> bool:
    """True when the path (or, for a glob, at least one match) exists."""
    if has_glob(location):
        return bool(expand(location))
    return bool(location.fs.exists(location.path))


def _is_dir(location: Location) -> bool:
    info = _info(location)
    return info is not None and info.get("type") == "directory"


def _file_size(location: Location) -> int:
    """Bytes of a file; -1 for a directory or a missing path (spec 4.2.7)."""
    info = _info(location)
    if info is None or info.get("type") == "directory":
        return -1
    return int(info.get("size") or 0)


def _dir_size(location: Location) -> int:
    """Bytes of the files directly in a directory (not recursive); -1 for a file or a missing path."""
    info = _info(location)
    if info is None or info.get("type") != "directory":
        return -1
    entries = location.fs.ls(location.path, detail=True)
    return sum(int(entry.get("size") or 0) for entry in entries if entry.get("type") != "directory")


def _block_size(location: Location) -> int:
    """A file's block size (a local file's st_blksize, else what the file system reports, else 0); -1 if no file."""
    info = _info(location)
    if info is None or info.get("type") == "directory":
        return -1
    if location.local:
        return int(os.stat(location.path).st_blksize)
    return int(info.get("blocksize") or info.get("block_size") or 0)


def _file_function(name: str, body: Callable[[Location], Any]) -> ELFunction:
    return ELFunction(name, lambda ctx, path: _storage_call(name, path, body), min_args=1, max_args=1)


FILE_SYSTEM = (
    _file_function("fs:exists", _exists),
    _file_function("fs:isDir", _is_dir),
    _file_function("fs:dirSize", _dir_size),
    _file_function("fs:fileSize", _file_size),
    _file_function("fs:blockSize", _block_size),
)

FUNCTIONS = (*BASIC, *WORKFLOW, *FILE_SYSTEM)
REGISTRY = FunctionRegistry().with_functions(*FUNCTIONS)
FUNCTION_NAMES: frozenset[str] = frozenset(function.name for function in FUNCTIONS)


# --- evaluation --------------------------------------------------------------------------------

def workflow_context(state: WorkflowState) -> ELContext:
    """The context a workflow's expressions see: its configuration and the EL constants as variables, its state."""
    variables: dict[str, Any] = {**CONSTANTS, **state.conf}
    return ELContext(variables=variables, functions=REGISTRY, phase=Phase.START, extra={"workflow": state})


def evaluate_text(template: str, state: WorkflowState) -> str:
    """A template's text (null is ''); raises oozie.el.ELError on a bad expression."""
    return evaluate_to_string(template, workflow_context(state))


def evaluate_predicate(template: str, state: WorkflowState) -> bool:
    """A decision case: true when its text, trimmed, is exactly 'true' (Oozie's DecisionActionExecutor)."""
    return evaluate_text(template, state).strip() == "true"


def resolve_spec(spec: Mapping[str, Any], state: WorkflowState) -> dict[str, Any]:
    """The spec with every string (keys included) evaluated, lists and maps walked; other values kept."""
    context = workflow_context(state)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return evaluate_to_string(value, context) if "${" in value else value
        if isinstance(value, Mapping):
            return {walk(key): walk(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [walk(item) for item in value]
        return value

    return {walk(key): walk(item) for key, item in spec.items()}
