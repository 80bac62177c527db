"""Reading a workflow application (workflow.xml and its config-default.xml) from fsspec storage, under the roots."""

from __future__ import annotations

import fsspec

from oozie.definitions.config import parse_hadoop_configuration
from oozie.definitions.errors import ApplicationUnreadableError
from oozie.properties import WF_APP_PATH

CONFIG_DEFAULT = "config-default.xml"
MAX_CONFIG_DEFAULT_BYTES = 1_048_576


def load_application(app_path: str, *, trusted: bool) -> tuple[str, dict[str, str]]:
    """(workflow.xml text, config-default.xml values or {}) of a directory or a workflow.xml path.

    Same checks as coordinator applications (kernel.application_sources.read_application): protocols
    and, unless trusted (the CLI on the server), the application roots, before storage is touched.
    config-default.xml is read next to workflow.xml when it exists (Oozie's SubmitXCommand).
    """
    # kernel.application_sources reads Django settings: imported here, so the package itself stays pure
    from kernel.application_sources import read_application  # noqa: PLC0415 - it imports Django; workflows.definitions imports no Django (ADR 0021)

    xml, app_dir = read_application(
        app_path, trusted=trusted, filename="workflow.xml", what="workflow application", prop=WF_APP_PATH,
    )
    location = app_dir.rstrip("/") + "/" + CONFIG_DEFAULT
    try:
        fs, path = fsspec.core.url_to_fs(location)
        if not fs.exists(path):
            return xml, {}
        with fs.open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_DEFAULT_BYTES + 1)
    except (OSError, ValueError, ImportError) as exc:
        raise ApplicationUnreadableError(f"cannot read {location}: {exc}", source=location) from None
    return xml, parse_hadoop_configuration(data, location)
