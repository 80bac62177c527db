"""Bundle applications on disk for tests: coordinator apps in a directory and a bundle.xml naming them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from datasets.timeline import format_datetime


def minute(offset: int) -> str:
    """A whole minute `offset` minutes from now, as Oozie writes it."""
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


COORDINATOR = """<coordinator-app name="{name}" frequency="${{coord:minutes(1)}}" start="${{start}}" end="${{end}}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <controls><concurrency>2</concurrency></controls>
  <action><workflow><app-path>task:{task}</app-path>{configuration}</workflow></action>
</coordinator-app>"""


def write_coordinator(root: Path, name: str, *, task: str = "examples.noop", configuration: str = "",
                      text: str | None = None) -> Path:
    """A coordinator application directory `root/name` with its coordinator.xml (start, end from properties)."""
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    if configuration:
        configuration = f"<configuration>{configuration}</configuration>"
    (directory / "coordinator.xml").write_text(
        text if text is not None else COORDINATOR.format(name=name, task=task, configuration=configuration)
    )
    return directory


def bundle_xml(coordinators: list[tuple[str, Path]], *, name: str = "b1", kick_off: str | None = None,
               critical: tuple[str, ...] = (), disabled: tuple[str, ...] = (), extra: str = "",
               version: str = "0.2") -> str:
    """A bundle naming the coordinator directories, each given start/end from the bundle's properties."""
    controls = f"<controls><kick-off-time>{kick_off}</kick-off-time></controls>" if kick_off else ""
    parts = []
    for coord_name, path in coordinators:
        attrs = ' critical="true"' if coord_name in critical else ""
        if coord_name in disabled:
            attrs += ' enabled="false"'
        parts.append(
            f'<coordinator name="{coord_name}"{attrs}><app-path>file://{path}</app-path>'
            f"<configuration><property><name>coordName</name><value>{coord_name}</value></property>{extra}"
            "</configuration></coordinator>"
        )
    return f'<bundle-app name="{name}" xmlns="uri:oozie:bundle:{version}">{controls}{"".join(parts)}</bundle-app>'


def window(back: int = 3, ahead: int = 60) -> dict[str, str]:
    """Properties giving the coordinators a start in the past and an end in the future."""
    return {"start": minute(-back), "end": minute(ahead)}
