"""What a run of the `oozie` command gave the tests: its exit code and output (the `run_oozie` fixture's answer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Ran:
    """What one `oozie` command line did: its exit code and output."""

    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.rstrip("\n").split("\n") if self.out else []


RunOozie = Callable[..., Ran]
