"""A job's configuration as OozieCLI.getConfiguration builds it, and what the command knows about its user and zone.

`user.name` first (see `default_user`), then the `-config` file (`.properties` or Hadoop
`.xml`), then `-D name=value`; `-Dheader:NAME=VALUE` are HTTP headers. A submission the server
refuses because it cannot read the application gets a hint when that application is on this
machine's disk (`local_application_hint`); `application` names that application (`-upload`
sends it: oozieclient.upload).
"""

from __future__ import annotations

import argparse
import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from urllib.parse import urlsplit

from oozieclient import render
from oozieclient.properties import (
    ConfigurationError,
    expand,
    parse_hadoop_xml,
    parse_java_properties,
)

APP_PATHS = ("oozie.wf.application.path", "oozie.coord.application.path", "oozie.bundle.application.path")
# Refusals meaning "the server could not read the application": no directory, no definition, unreadable.
UNREADABLE_APPLICATION = frozenset({"E0504", "E0505", "E0710", "E1001", "E1301"})
HEADER_PREFIX = "header:"
MAX_CONFIG_BYTES = 10 * 1024 * 1024


class UsageError(Exception):
    """Options that do not make a command: printed as `Invalid sub-command: ...` and the short help, exit 255."""


def default_user(options: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """`user.name` unless the file or `-D` says otherwise: the BASIC user name, else OOZIE_USER, else the login name.

    Oozie's client sends the OS user (OozieClient.createConfiguration); with BASIC authentication
    the server checks `user.name` against the authenticated user, so that name is sent instead.
    """
    return options.username or environ.get("OOZIE_USER") or getpass.getuser()


def properties_and_headers(defines: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """`-D name=value` as job properties, and `-Dheader:NAME=VALUE` as HTTP headers (Oozie's WS_HEADER_PREFIX)."""
    properties: dict[str, str] = {}
    headers: dict[str, str] = {}
    for define in defines:
        name, sep, value = define.partition("=")
        if not name:
            raise UsageError(f"-D {define!r}: a property name is required (-D name=value)")
        value = value if sep else "true"  # commons-cli's value separator: `-Dflag` is flag=true
        if name.startswith(HEADER_PREFIX):
            headers[name[len(HEADER_PREFIX):]] = value
        else:
            properties[name] = value
    return properties, headers


def read_configuration(path: str) -> dict[str, str]:
    """A `-config` file's properties: `.properties` (java.util.Properties) or `.xml` (Hadoop); other names refused."""
    file = Path(path)
    if not file.is_file():
        raise ConfigurationError(f"configuration file [{path}] not found")
    if file.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigurationError(f"configuration file [{path}] is larger than {MAX_CONFIG_BYTES} bytes")
    if path.endswith(".properties"):
        return parse_java_properties(file.read_text(encoding="utf-8"), path)
    if path.endswith(".xml"):
        return parse_hadoop_xml(file.read_bytes(), path)
    raise ConfigurationError("configuration must be a '.properties' or a '.xml' file")


def job_configuration(options: argparse.Namespace, environ: Mapping[str, str], *, required: bool = True) -> dict[str, str] | None:
    """user.name, then the -config file, then -D (OozieCLI.getConfiguration); None when neither is given and not required."""
    defined, _ = properties_and_headers(options.defines)
    if options.config is None and not defined:
        if required:
            raise ConfigurationError("configuration is not specified: -config job.properties (or job.xml) or -D name=value")
        return None
    configuration = {"user.name": default_user(options, environ)}
    if options.config is not None:
        configuration.update(read_configuration(options.config))
    configuration.update(defined)
    return configuration


@dataclass(frozen=True)
class Application:
    """The application path a configuration names: the property, its value with `${...}` resolved, and the path on this machine."""

    name: str  # oozie.wf.application.path, oozie.coord.application.path or oozie.bundle.application.path
    path: str  # the value, `${name}` references resolved from the configuration
    local: str  # the path on this machine's disk it would name (`file://` or a bare path); "" for other storage


def local_path(value: str, *, relative: bool = False) -> str:
    """The path on this machine a `file://` URI or a bare path names; "" for another scheme (or a relative path unless `relative`)."""
    parts = urlsplit(value)
    if parts.scheme == "file":
        return parts.path
    if parts.scheme or not value or not (relative or value.startswith("/")):
        return ""
    return value


def application(configuration: Mapping[str, str]) -> Application | None:
    """The first application path property set (Oozie takes exactly one), resolved; None when there is none."""
    for name in APP_PATHS:
        value = configuration.get(name, "").strip()
        if value:
            path = expand(value, configuration)
            return Application(name, path, local_path(path, relative=True))
    return None


def local_application_hint(configuration: Mapping[str, str]) -> str:
    """Why the server may not read an application that exists on this machine's disk; "" when it is not local.

    `file://` URIs and bare paths name the server's storage, not the client's: an Oozie server
    reads them on its own disks (or maps them to its storage), never on the machine the command
    runs on. This service can take the application with the submission (`-upload`).
    """
    app = application(configuration)
    if app is None or not app.local or not os.path.exists(app.local):
        return ""
    return (
        f"{app.name} = {app.path} is on this machine's disk ({app.local}); the Oozie server reads application paths "
        "on its own storage, not on the client's. Send it with the submission: run the command again with -upload "
        "(this service; Apache Oozie has no upload), or copy the application to a place the server can read (a "
        f"directory under its application roots, or a storage URI it maps) and name that path in {app.name}."
    )


def time_zone(options: argparse.Namespace, environ: Mapping[str, str]) -> tzinfo | None:
    """-localtime (None: the machine's zone), else -timezone, else OOZIE_TIMEZONE, else GMT."""
    if getattr(options, "localtime", False):
        return None
    return render.resolve_zone(getattr(options, "timezone", None) or environ.get("OOZIE_TIMEZONE") or "GMT")
