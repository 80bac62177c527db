"""Dry-run: job properties file in, every action's plan out; no database, no storage.

A plan names URIs as the coordinator does; `mapped` shows them where a migrated application's
URIs map to (STORAGE_URI_MAP), which is where the run reads and writes.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from coordinators.plan import iter_action_plans, resolve_coordinator
from datasets.timeline import DEFAULT_MAX_INSTANCES, TimelineError
from kernel.storage import map_uri
from oozie.definitions import (
    DefinitionError,
    Loader,
    fsspec_loader,
    load_configuration,
    parse_coordinator,
)
from oozie.el import ELError
from oozie.properties import COORD_APP_PATH, USER_NAME, expand_properties

MAX_FILE_BYTES = 1_048_576


def _read(path: Path, what: str) -> bytes:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise DefinitionError(f"{what} {path} is larger than {MAX_FILE_BYTES} bytes", source=str(path))
        return path.read_bytes()
    except OSError as exc:
        raise DefinitionError(f"cannot read {what} {path}: {exc.strerror or exc}", source=str(path)) from None


def locate_application(properties_file: Path, app_path: str) -> Path:
    """The coordinator XML named by oozie.coord.application.path: relative, absolute or file:// (a directory means coordinator.xml in it).

    A migrated application's URI is read where it maps to (STORAGE_URI_MAP).
    """
    app_path = map_uri(app_path)
    if "://" in app_path:
        parts = urlsplit(app_path)
        if parts.scheme != "file":
            raise DefinitionError(f"{COORD_APP_PATH}={app_path!r}: dry-run reads local files (file://) only", source=str(properties_file))
        path = Path(parts.path)
    else:
        path = Path(app_path)
        if not path.is_absolute():
            path = properties_file.parent / path
    if path.is_dir():
        path = path / "coordinator.xml"
    return path


def dryrun(
    config: Path,
    *,
    now: datetime,
    max_actions: int,
    processing_timezone: str = "UTC",
    max_instances: int = DEFAULT_MAX_INSTANCES,
    loader: Loader | None = None,
    properties: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Plans of up to max_actions actions (start to end, end exclusive), in the dry-run JSON shape.

    `properties` are the job's (the CLI's: the file, its `-D` values over it, expanded); without
    them the file is read. Every refusal, whatever layer finds it, is a DefinitionError: the
    command prints one line.
    """
    try:
        if properties is None:
            properties = load_configuration(_read(config, "configuration"), str(config))
        # As Oozie reads it: `${nameNode}/apps/x` names the nameNode property (a Hadoop configuration).
        app_path = expand_properties(properties, user=properties.get(USER_NAME) or getpass.getuser()).get(COORD_APP_PATH)
        if not app_path:
            raise DefinitionError(f"{COORD_APP_PATH} is not set", source=str(config))
        xml_path = locate_application(config, app_path)
        if loader is None:
            base = fsspec_loader(max_bytes=MAX_FILE_BYTES)

            def loader(url: str) -> bytes:
                return base(map_uri(url))  # a migrated application's includes: where they map to

        app = parse_coordinator(
            _read(xml_path, "coordinator application"), str(xml_path), app_dir=str(xml_path.parent), loader=loader
        )
        user = properties.get(USER_NAME) or getpass.getuser()
        resolved = resolve_coordinator(
            app, properties, user=user, processing_timezone=processing_timezone, max_instances=max_instances
        )
        plans = iter_action_plans(resolved, now=now, max_actions=max_actions)
        return {"actions": mapped([plan.as_json() for plan in plans])}
    except (ELError, TimelineError) as exc:  # a backstop: the layers above already name their element
        raise DefinitionError(str(exc), source=str(config)) from None


def _mapped_value(value: Any) -> Any:
    """A configuration value with each comma-separated URI mapped (`${coord:dataIn(...)}` lists several)."""
    if not isinstance(value, str) or "://" not in value:
        return value
    return ",".join(map_uri(part) for part in value.split(","))


def mapped(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Action plans (as_json) with their app path, data-in and data-out URIs and configuration values mapped (STORAGE_URI_MAP)."""
    result = []
    for action in actions:
        shown = dict(action)
        shown["app_path"] = map_uri(action["app_path"])
        for kind in ("data_in", "data_out"):
            shown[kind] = {name: [map_uri(uri) for uri in uris] for name, uris in action[kind].items()}
        shown["configuration"] = {name: _mapped_value(value) for name, value in action["configuration"].items()}
        result.append(shown)
    return result


def as_text(result: dict[str, Any]) -> str:
    """A readable rendering of the dry-run result."""
    lines = []
    for action in result["actions"]:
        lines.append(f"action {action['number']}  nominal {action['nominal_time']}  app {action['app_path']}")
        for kind in ("data_in", "data_out"):
            for name, uris in action[kind].items():
                lines.append(f"  {kind.replace('_', '-')} {name}: {', '.join(uris) if uris else '(none)'}")
        if "input_logic" in action:
            lines.append(f"  input-logic: ready when {action['input_logic']['requires']}")
        for name, value in action["configuration"].items():
            lines.append(f"  {name} = {value}")
    lines.append(f"{len(result['actions'])} action(s)")
    return "\n".join(lines)


def dumps(result: dict[str, Any]) -> str:
    """JSON output."""
    return json.dumps(result, indent=2)
