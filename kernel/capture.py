"""What a running try logs and prints, and its error's full traceback, in a bounded buffer (kernel.tries keeps it).

A worker wraps each try (a workflow node's run, a batch job's stage, a command's attempt) in
`capturing()`. While it runs, the records its thread logs (at TRY_LOG_LEVEL and above, any
logger) and what it prints (stdout; in a worker, Celery's redirected stdout and stderr) go to a
bounded buffer: past TRY_LOG_MAX_CHARS the head is dropped and the cut is said in the text.
An error's traceback is noted whole (`note_exception`, tail kept past TRY_TRACEBACK_MAX_CHARS).
No models here: the worker's logging set-up (project.celery) installs the router before Django
is set up.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from django.conf import settings

#: One line per record, its time in UTC (oozieapi reads the level and the time back).
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class Capture:
    """What one try logged and printed (the tail, bounded) and its error's traceback."""

    def __init__(self, limit: int, traceback_limit: int) -> None:
        self.limit, self.traceback_limit = max(1, limit), max(1, traceback_limit)
        self.parts: deque[str] = deque()
        self.size = 0
        self.dropped = 0
        self.traceback = ""
        self.highest = logging.NOTSET  # the highest level logged

    def write(self, text: str) -> None:
        """Append text, dropping the oldest past the limit."""
        if not text:
            return
        self.parts.append(text)
        self.size += len(text)
        while self.size > self.limit and self.parts:
            excess = self.size - self.limit
            head = self.parts[0]
            if len(head) <= excess:
                self.parts.popleft()
                self.size -= len(head)
                self.dropped += len(head)
            else:
                self.parts[0] = head[excess:]
                self.size -= excess
                self.dropped += excess

    def attach(self, title: str, text: str) -> None:
        """A block of output (a shell action's stdout or stderr) under its title."""
        if text:
            self.write(f"--- {title} ---\n{text}{'' if text.endswith(chr(10)) else chr(10)}")

    def note_exception(self, exc: BaseException) -> None:
        """The error's full traceback (the last one noted wins: the one that ended the try)."""
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        if len(text) > self.traceback_limit:
            cut = len(text) - self.traceback_limit
            text = f"[... {cut} characters of the traceback dropped ...]\n" + text[cut:]
        self.traceback = text

    def text(self) -> str:
        """The log as kept, the cut said first."""
        body = "".join(self.parts)
        if self.dropped:
            return f"[... {self.dropped} earlier characters dropped (TRY_LOG_MAX_CHARS={self.limit}) ...]\n{body}"
        return body


_local = threading.local()
_install_lock = threading.Lock()


def current() -> Capture | None:
    """The capture of the try this thread runs, if any."""
    return getattr(_local, "capture", None)


def note_exception(exc: BaseException) -> None:
    """Keep the error's full traceback in the current try (nothing outside a try)."""
    capture = current()
    if capture is not None:
        capture.note_exception(exc)


def attach(title: str, text: str) -> None:
    """Add a block of output to the current try (nothing outside a try)."""
    capture = current()
    if capture is not None:
        capture.attach(title, text)


class Router(logging.Handler):
    """On the root logger: a record logged by a thread that runs a try goes to that try's capture.

    Named in the project's LOGGING (every logging set-up, Django's included, puts one back on
    the root logger) and installed again by `install` where Celery's set-up removed it.
    """

    def __init__(self, level: int | str = logging.NOTSET) -> None:
        super().__init__(level)
        formatter = logging.Formatter(FORMAT)
        formatter.converter = time.gmtime  # UTC, as every time the service shows
        self.setFormatter(formatter)

    def emit(self, record: logging.LogRecord) -> None:
        capture = getattr(_local, "capture", None)
        if capture is None or getattr(_local, "writing", False):
            return
        try:
            capture.write(self.format(record) + "\n")
            capture.highest = max(capture.highest, record.levelno)
        except Exception:  # a record that cannot be formatted must not fail the task
            self.handleError(record)


class _Stream:
    """sys.stdout (outside a worker): what a try's thread prints also goes to its capture."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        capture = getattr(_local, "capture", None)
        if capture is None:
            return self._inner.write(text)
        capture.write(text)
        # The inner stream may be Celery's logging proxy: its record is already kept.
        _local.writing = True
        try:
            return self._inner.write(text)
        finally:
            _local.writing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def level() -> int:
    """TRY_LOG_LEVEL as a number (INFO when the name is not a level)."""
    value = logging.getLevelName(str(settings.TRY_LOG_LEVEL).upper())
    return value if isinstance(value, int) else logging.INFO


def install(*, lower_root_level: bool = False) -> None:
    """Route log records to captures: the router on the root logger (again after a logging set-up removed it).

    `lower_root_level` (a worker, after Celery set up its logging): let records at TRY_LOG_LEVEL
    be made even when the worker's own log level is higher; the handlers already there keep
    the level they had, so the worker's log does not grow. Celery sets logging up again in
    each pool process (clearing the root's handlers): its signal calls this again there.
    """
    root = logging.getLogger()
    if not lower_root_level and any(isinstance(handler, Router) for handler in root.handlers):
        return
    with _install_lock:
        if lower_root_level and root.getEffectiveLevel() > level():
            before = root.getEffectiveLevel()
            for handler in root.handlers:
                if handler.level < before and not isinstance(handler, Router):
                    handler.setLevel(before)
            root.setLevel(level())
        if not any(isinstance(handler, Router) for handler in root.handlers):
            root.addHandler(Router(level()))


def _wrap_streams() -> None:
    """What is printed goes to the capture too, unless it goes to logging already (a Celery worker's
    redirected stdout: the router keeps its records, once). Not stderr: log handlers write there,
    and their records are kept by the router already."""
    if not isinstance(sys.stdout, _Stream) and not _logs(sys.stdout):
        sys.stdout = _Stream(sys.stdout)  # type: ignore[assignment]


def _logs(stream: Any) -> bool:
    """Celery's LoggingProxy (what a worker's stdout and stderr are): writes become log records."""
    return hasattr(stream, "logger") and hasattr(stream, "loglevel")


@contextmanager
def capturing() -> Iterator[Capture]:
    """Capture what this thread logs and prints until the block ends (a try inside a try: the inner one)."""
    install()
    _wrap_streams()
    capture = Capture(int(settings.TRY_LOG_MAX_CHARS), int(settings.TRY_TRACEBACK_MAX_CHARS))
    outer = getattr(_local, "capture", None)
    _local.capture = capture
    try:
        yield capture
    finally:
        _local.capture = outer


