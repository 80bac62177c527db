"""Which kind of job an id names, as Oozie routes it: by the suffix before any '@'.

`...-B` is a bundle, `...-W` a workflow job (`...-W@node` one of its nodes), anything else a
coordinator job (`...-C@7` one of its actions). The Web Services API, the `job`/`jobs` command
line and the masking of secrets all route with `kind_of`.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["bundle", "coordinator", "workflow"]
SUFFIXES: dict[str, Kind] = {"-B": "bundle", "-W": "workflow"}


def kind_of(job_id: str) -> Kind:
    """The kind of job the id (or the id of one of its actions or nodes) belongs to."""
    base = job_id.partition("@")[0]
    return next((kind for suffix, kind in SUFFIXES.items() if base.endswith(suffix)), "coordinator")


def is_workflow_id(job_id: str) -> bool:
    """A workflow job's id or one of its nodes' ids."""
    return kind_of(job_id) == "workflow"


def is_bundle_id(job_id: str) -> bool:
    """A bundle job's id (bundles' coordinators have ids of their own)."""
    return "@" not in job_id and kind_of(job_id) == "bundle"
