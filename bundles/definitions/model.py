"""A bundle application as written, and as resolved at submission: frozen dataclasses (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from oozie.definitions.model import Parameter


@dataclass(frozen=True, slots=True)
class BundleCoordinator:
    """A `<coordinator>` of a bundle as written: every value still an EL string."""

    name: str
    app_path: str
    configuration: tuple[tuple[str, str], ...] = ()
    critical: str | None = None
    enabled: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class BundleApp:
    """A `<bundle-app>` (schemas 0.1 and 0.2) as written."""

    schema_version: str
    name: str
    coordinators: tuple[BundleCoordinator, ...]
    kick_off_time: str | None = None
    parameters: tuple[Parameter, ...] = ()
    source: str = "<inline>"


@dataclass(frozen=True, slots=True)
class ResolvedCoordinator:
    """A bundle's coordinator after phase-1 EL: its app path, its own configuration, critical, enabled."""

    name: str
    app_path: str
    configuration: dict[str, str] = field(default_factory=dict)
    critical: bool = False
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class ResolvedBundle:
    """A bundle with every variable resolved: its name, kick-off time (None: now) and coordinators."""

    name: str
    kick_off_time: datetime | None
    coordinators: tuple[ResolvedCoordinator, ...]
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def enabled(self) -> tuple[ResolvedCoordinator, ...]:
        """The coordinators the bundle starts (`enabled` is not false)."""
        return tuple(coordinator for coordinator in self.coordinators if coordinator.enabled)
