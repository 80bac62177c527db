"""The whole machine's CPU time over a benchmark's windows, read from Linux's /proc/stat.

A benchmark whose heading is a latency (`bench trigger-latency`: RUNNING p99 under 1 s) needs to
say whether the machine had the CPU for it: every process counts (workers, beat, Redis, the
database, the benchmark itself), so the sampler reads the machine's own counters, not one
process's. Elsewhere than Linux it reads nothing and every figure is None.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Self

STAT = Path("/proc/stat")


def busy_seconds(text: str) -> float:
    """CPU seconds all cores spent busy since boot, from /proc/stat's text (its `cpu` line).

    Busy is user, nice, system, irq, softirq and steal: everything but idle and iowait. Guest
    time is already counted in user and nice.
    """
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(value) for value in fields[1:9]]
            ticks += [0] * (8 - len(ticks))
            user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
            return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    raise ValueError("no aggregate cpu line in /proc/stat")


def cores() -> int:
    """The cores this process may run on (what the machine offers the benchmark's processes)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class _Sampling:
    """A thread that samples while in its `with` block (Linux only): one sample on entering, if `first`, and one on leaving."""

    first = True

    def __init__(self, name: str) -> None:
        self.available = STAT.exists()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Self:
        if self.available:
            if self.first:
                self.sample()
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if self.available:
            self.sample()

    def sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        raise NotImplementedError


class MachineCpu(_Sampling):
    """Samples the machine's busy CPU seconds every `interval` seconds in a thread, while in its `with` block.

    `busy_between(t0, t1)` is the busy CPU seconds between two wall-clock times (`time.time()`),
    interpolated linearly between the samples around each end.
    """

    def __init__(self, interval: float = 0.05) -> None:
        super().__init__("machine-cpu")
        self.interval = interval
        self.times: list[float] = []
        self.busy: list[float] = []
        self._lock = threading.Lock()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        """Take a sample now (the thread takes one every `interval`): a window may end here."""
        if not self.available:
            return
        with self._lock:
            self.times.append(time.time())
            self.busy.append(busy_seconds(STAT.read_text()))

    def _at(self, when: float) -> float | None:
        index = bisect.bisect_left(self.times, when)
        if index == 0:
            return self.busy[0] if self.times and self.times[0] == when else None
        if index == len(self.times):
            return None
        t0, t1 = self.times[index - 1], self.times[index]
        b0, b1 = self.busy[index - 1], self.busy[index]
        return b0 + (b1 - b0) * (when - t0) / (t1 - t0) if t1 > t0 else b1

    def busy_between(self, start: float, end: float) -> float | None:
        """Busy CPU seconds of the whole machine from `start` to `end`; None outside what was sampled."""
        if not self.available or end < start:
            return None
        with self._lock:
            first, last = self._at(start), self._at(end)
        if first is None or last is None:
            return None
        return max(0.0, last - first)


def _group(pid: int, comm: str, own: int) -> str:
    """What a process is, for `process_cpu`: one of the service's parts, the benchmark, or other."""
    if pid == own:
        return "benchmark"
    if comm.startswith("postgres"):
        return "postgresql"
    if comm.startswith("redis-server"):
        return "redis"
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    if any(word.endswith(b"celery") for word in words):  # `celery` itself, or `python -m celery`
        if b"beat" in words:
            return "beat"
        if b"worker" in words:
            return "workers"
    return "other"


def process_cpu(own: int | None = None) -> dict[int, tuple[str, float]]:
    """Every process's CPU seconds so far (user and system) with its group: pid -> (group, seconds).

    Groups: `postgresql`, `redis`, `workers` (Celery workers' main and pool processes), `beat`,
    `benchmark` (`own`, this process by default) and `other`. Empty elsewhere than Linux.
    """
    own = os.getpid() if own is None else own
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, tuple[str, float]] = {}
    for entry in Path("/proc").iterdir() if STAT.exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # gone in between
            continue
        pid = int(entry.name)
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        found[pid] = (_group(pid, comm, own), (int(fields[11]) + int(fields[12])) / tick)
    return found


def cpu_by_group(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds each group spent between two `process_cpu` snapshots (a process new in `after` counts whole)."""
    spent: dict[str, float] = {}
    for pid, (group, seconds) in after.items():
        _, earlier = before.get(pid, (group, 0.0))
        spent[group] = spent.get(group, 0.0) + max(0.0, seconds - earlier)
    return dict(sorted(spent.items()))


class Snapshots(_Sampling):
    """`process_cpu` snapshots taken by a thread at given wall-clock times (`time.time()`), while in its `with` block.

    `taken` holds (time, snapshot); one more is taken on leaving the block, so the last window
    ends where the benchmark stopped looking, and `sample()` takes one at once (from any thread:
    the readers order them by time).
    """

    first = False

    def __init__(self, times: list[float]) -> None:
        super().__init__("process-cpu")
        self.times = sorted(times)
        self.taken: list[tuple[float, dict[int, tuple[str, float]]]] = []

    def sample(self) -> None:
        if self.available:
            self.taken.append((time.time(), process_cpu()))

    def _run(self) -> None:
        for when in self.times:
            if self._stop.wait(max(0.0, when - time.time())):
                return
            self.sample()

    def windows(self) -> list[tuple[float, float, dict[str, float]]]:
        """(start, end, CPU seconds per group) between each snapshot and the next, in order."""
        taken = self._ordered()
        return [(at, later, cpu_by_group(before, after))
                for (at, before), (later, after) in zip(taken, taken[1:], strict=False)]

    def around(self, start: float, end: float) -> tuple[float, float, dict[str, float]] | None:
        """(from, to, CPU seconds per group) from the last snapshot at or before `start` to the first at or after `end`.

        None when no snapshot was taken on either side.
        """
        taken = self._ordered()
        before = [(at, snapshot) for at, snapshot in taken if at <= start]
        after = [(at, snapshot) for at, snapshot in taken if at >= end]
        if not before or not after:
            return None
        (first, early), (last, late) = before[-1], after[0]
        return first, last, cpu_by_group(early, late)

    def _ordered(self) -> list[tuple[float, dict[int, tuple[str, float]]]]:
        return sorted(self.taken, key=lambda taken: taken[0])
