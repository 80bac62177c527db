"""Phase 1 for bundles: job properties and `<parameters>` defaults resolve every value (pure).

Variables are the job properties (`${appPath}`) and `${bundle:conf('job.tracker')}` for names
that are not identifiers; an unresolved variable or an unset `bundle:conf` property rejects
the submission, naming it and the coordinator. A coordinator's run configuration is the
bundle's job properties overlaid by the coordinator's own `<configuration>` (Oozie's
precedence), with `oozie.coord.application.path`, `oozie.bundle.id` and the bundle's user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bundles.definitions.model import BundleApp, ResolvedBundle, ResolvedCoordinator
from datasets.timeline import parse_datetime
from datasets.timeline.errors import TimelineError
from oozie.definitions.errors import DefinitionError
from oozie.definitions.parser import merge_parameters
from oozie.el import (
    ELContext,
    ELError,
    ELEvaluationError,
    ELFunction,
    FunctionRegistry,
    Phase,
    default_variables,
    evaluate_to_string,
    unresolved_variables,
)
from oozie.properties import BUNDLE_ID, COORD_APP_PATH, USER_NAME

MAX_NAME_LENGTH = 255
TRUE = "true"


def _conf(ctx: ELContext, name: Any) -> str:
    """bundle:conf(name): a job property, whatever its name; an unset one is an error naming it."""
    properties: Mapping[str, str] = ctx.extra["conf"]
    key = str(name)
    if key not in properties:
        raise ELEvaluationError(f"bundle:conf({key!r}): property {key!r} is not set")
    return properties[key]


REGISTRY = FunctionRegistry().with_functions(
    ELFunction("bundle:conf", _conf, frozenset({Phase.SUBMISSION}), min_args=1, max_args=1)
)


def _fail(app: BundleApp, where: str, message: str, line: int | None = None) -> DefinitionError:
    return DefinitionError(message, source=app.source, line=line, element=where)


def _value(text: str, ctx: ELContext, app: BundleApp, where: str, line: int | None = None) -> str:
    missing = unresolved_variables(text, ctx.variables)
    if missing:
        raise _fail(app, where, f"unresolved variable(s): {', '.join(sorted(missing))}", line)
    try:
        return evaluate_to_string(text, ctx)
    except (ELError, TimelineError) as exc:
        raise _fail(app, where, str(exc), line) from None


def resolve_bundle(app: BundleApp, properties: Mapping[str, str]) -> ResolvedBundle:
    """Resolve the name, kick-off time and every coordinator's app path, configuration, critical and enabled."""
    merged = merge_parameters(app, dict(properties))
    ctx = ELContext(
        variables={**default_variables(), **merged}, functions=REGISTRY, phase=Phase.SUBMISSION,
        extra={"conf": merged},
    )
    name = _value(app.name, ctx, app, "name").strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise _fail(app, "name", f"the bundle's name must be 1 to {MAX_NAME_LENGTH} characters, got {len(name)}")
    kick_off = None
    if app.kick_off_time:
        text = _value(app.kick_off_time, ctx, app, "kick-off-time").strip()
        if text:
            try:
                kick_off = parse_datetime(text)
            except TimelineError as exc:
                raise _fail(app, "kick-off-time", str(exc)) from None
    coordinators = []
    for coordinator in app.coordinators:
        where = f"coordinator {coordinator.name}"
        app_path = _value(coordinator.app_path, ctx, app, f"{where} app-path", coordinator.line).strip()
        if not app_path:
            raise _fail(app, f"{where} app-path", "the coordinator's app-path is empty", coordinator.line)
        configuration = {
            _value(key, ctx, app, f"{where} property {key}", coordinator.line).strip():
                _value(value, ctx, app, f"{where} property {key}", coordinator.line)
            for key, value in coordinator.configuration
        }
        flags = {
            flag: _value(raw, ctx, app, f"{where} {flag}", coordinator.line).strip().lower() == TRUE
            for flag, raw in (("critical", coordinator.critical), ("enabled", coordinator.enabled))
            if raw is not None
        }
        coordinators.append(ResolvedCoordinator(
            name=coordinator.name, app_path=app_path, configuration=configuration,
            critical=flags.get("critical", False), enabled=flags.get("enabled", True),
        ))
    return ResolvedBundle(name=name, kick_off_time=kick_off, coordinators=tuple(coordinators), properties=merged)


def run_configuration(
    bundle: ResolvedBundle, coordinator: ResolvedCoordinator, *, user: str, bundle_id: str = ""
) -> dict[str, str]:
    """What the coordinator is submitted with: bundle properties < its own configuration < app path, bundle id, user."""
    configuration = {**bundle.properties, **coordinator.configuration, COORD_APP_PATH: coordinator.app_path}
    configuration[USER_NAME] = user
    if bundle_id:
        configuration[BUNDLE_ID] = bundle_id
    return configuration
