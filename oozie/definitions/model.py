"""A coordinator application as written: frozen dataclasses of raw (not yet evaluated) strings."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

DEFAULT_DONE_FLAG = "_SUCCESS"


@dataclass(frozen=True, slots=True)
class Parameter:
    """A `<parameters>` property (schema 0.4+): required when it has no `<value>` (default None)."""

    name: str
    default: str | None = None
    description: str | None = None

    @property
    def required(self) -> bool:
        """True when the job configuration must provide it."""
        return self.default is None


@dataclass(frozen=True, slots=True)
class Controls:
    """`<controls>`: each value still an EL string, None when absent."""

    timeout: str | None = None
    concurrency: str | None = None
    execution: str | None = None
    throttle: str | None = None


@dataclass(frozen=True, slots=True)
class Dataset:
    """A synchronous dataset; done_flag is '_SUCCESS' when `<done-flag>` is absent, '' when empty."""

    name: str
    frequency: str
    initial_instance: str
    timezone: str
    uri_template: str
    done_flag: str = DEFAULT_DONE_FLAG
    source: str = "<inline>"
    line: int | None = None


@dataclass(frozen=True, slots=True)
class DataIn:
    """An input event: `<instance>`s, or a `<start-instance>`/`<end-instance>` range."""

    name: str
    dataset: str
    instances: tuple[str, ...] = ()
    start_instance: str | None = None
    end_instance: str | None = None

    @property
    def is_range(self) -> bool:
        """True for a start/end range, False for single instances."""
        return self.start_instance is not None


@dataclass(frozen=True, slots=True)
class LogicNode:
    """An `<input-logic>` element (schema 0.5, spec 6.10) as written: attributes still raw EL text.

    kind is "and", "or", "combine" or "data-in"; a data-in's `dataset` names an input event
    (a `<data-in>` of `<input-events>`), as in Oozie. and/or hold any nodes; combine holds data-ins.
    """

    kind: str
    name: str | None = None
    min: str | None = None
    wait: str | None = None
    dataset: str | None = None
    children: tuple[LogicNode, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class DataOut:
    """An output event: one instance."""

    name: str
    dataset: str
    instance: str
    nocleanup: bool = False


@dataclass(frozen=True, slots=True)
class SLAInfo:
    """An `<sla:info>` block, every field raw EL text or None; version is '0.1' or '0.2'."""

    version: str
    nominal_time: str
    should_end: str
    should_start: str | None = None
    max_duration: str | None = None  # 0.2
    alert_events: str | None = None  # 0.2
    alert_contact: str | None = None
    notification_msg: str | None = None
    upstream_apps: str | None = None
    app_name: str | None = None  # 0.1 from here on
    parent_client_id: str | None = None
    parent_sla_id: str | None = None
    dev_contact: str | None = None
    qa_contact: str | None = None
    se_contact: str | None = None
    alert_frequency: str | None = None
    alert_percentage: str | None = None

    def get(self, name: str) -> str | None:
        """A field by its XML name (`should-end`) or Python name (`should_end`), or None."""
        key = name.replace("-", "_")
        if key == "version" or key not in {f.name for f in fields(self)}:
            return None
        value = getattr(self, key)
        return value if isinstance(value, str) else None

    def as_dict(self) -> dict[str, str]:
        """Present fields by XML name."""
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "version" and value is not None:
                out[f.name.replace("_", "-")] = value
        return out


@dataclass(frozen=True, slots=True)
class Action:
    """The action: a workflow application path and its configuration, plus the SLA block if any."""

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
    dataset_includes: tuple[str, ...] = ()
    input_events: tuple[DataIn, ...] = ()
    input_logic: str | None = None  # the <input-logic> element as written (XML text)
    logic: LogicNode | None = None  # the same, parsed
    output_events: tuple[DataOut, ...] = ()
    source: str = "<inline>"

    @property
    def sla(self) -> SLAInfo | None:
        """The action's SLA block, if any."""
        return self.action.sla

    @property
    def namespace(self) -> str:
        """The XML namespace this definition was written in."""
        return f"uri:oozie:coordinator:{self.schema_version}"

    def dataset(self, name: str) -> Dataset | None:
        """The dataset of that name, or None."""
        return next((d for d in self.datasets if d.name == name), None)
