"""A coordinator application as written: frozen dataclasses of raw (not yet evaluated) strings."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_DONE_FLAG = "_SUCCESS"


@dataclass(frozen=True, slots=True)
class Parameter:
    """A <parameters> property: a default value, or required when it has none (schema 0.4+)."""

    name: str
    default: str | None


@dataclass(frozen=True, slots=True)
class Controls:
    """<controls>: each value still an EL string, None when absent."""

    timeout: str | None = None
    concurrency: str | None = None
    execution: str | None = None
    throttle: str | None = None


@dataclass(frozen=True, slots=True)
class Dataset:
    """A synchronous dataset; done_flag is '_SUCCESS' when absent, '' (the directory itself) when empty."""

    name: str
    frequency: str
    initial_instance: str
    timezone: str
    uri_template: str
    done_flag: str = DEFAULT_DONE_FLAG
    source: str = "<inline>"


@dataclass(frozen=True, slots=True)
class DataIn:
    """An input event: single <instance>s, or a <start-instance>/<end-instance> range."""

    name: str
    dataset: str
    instances: tuple[str, ...] = ()
    start_instance: str | None = None
    end_instance: str | None = None


@dataclass(frozen=True, slots=True)
class DataOut:
    """An output event: one instance."""

    name: str
    dataset: str
    instance: str
    nocleanup: bool = False


@dataclass(frozen=True, slots=True)
class SLAInfo:
    """An sla:info block (0.1 or 0.2), field name -> raw EL text."""

    version: str
    fields: tuple[tuple[str, str], ...]

    def get(self, name: str) -> str | None:
        """A field's raw text, or None."""
        return dict(self.fields).get(name)


@dataclass(frozen=True, slots=True)
class Action:
    """The action: an application path (picks the launcher) and its configuration."""

    app_path: str
    configuration: tuple[tuple[str, str], ...] = ()
    sla: SLAInfo | None = None


@dataclass(frozen=True, slots=True)
class CoordinatorApp:
    """A coordinator application definition, every value still raw text."""

    schema_version: str
    name: str
    frequency: str
    start: str
    end: str
    timezone: str
    action: Action
    controls: Controls = field(default_factory=Controls)
    parameters: tuple[Parameter, ...] = ()
    datasets: tuple[Dataset, ...] = ()
    input_events: tuple[DataIn, ...] = ()
    output_events: tuple[DataOut, ...] = ()
    source: str = "<inline>"

    def dataset(self, name: str) -> Dataset | None:
        """The dataset of that name, or None."""
        return next((d for d in self.datasets if d.name == name), None)
