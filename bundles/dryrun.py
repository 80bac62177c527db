"""A bundle's dry-run (`bundles.services.dryrun_bundle`) as readable text, for the CLI and the Oozie API."""

from __future__ import annotations

from typing import Any

from coordinators.dryrun import as_text as actions_text


def as_text(result: dict[str, Any]) -> str:
    """The bundle, then each coordinator with its flags and the plans of its first actions."""
    lines = [f"bundle {result['name']}  kick-off {result['kick_off_time'] or '(when started)'}"]
    coordinators = result["coordinators"]
    for coordinator in coordinators:
        flags = [name for name, on in (("critical", coordinator["critical"]), ("disabled", not coordinator["enabled"])) if on]
        lines.append(
            f"coordinator {coordinator['name']}  app {coordinator['app_path']}"
            + (f"  [{', '.join(flags)}]" if flags else "")
        )
        if coordinator["enabled"]:
            lines += [f"  {line}" for line in actions_text({"actions": coordinator["actions"]}).splitlines()]
    enabled = sum(1 for coordinator in coordinators if coordinator["enabled"])
    lines.append(f"{len(coordinators)} coordinator(s), {enabled} enabled")
    return "\n".join(lines)
