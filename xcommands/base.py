"""The XCommand base class: one class per verb, each run as one Celery task named after it."""

from __future__ import annotations

import dataclasses
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, final

from celery import current_app as app  # project.celery's app, set up by this process
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import DatabaseError, IntegrityError, OperationalError

from xcommands.errors import CommandFailed, PermanentError, TransientError, UnknownCommand

_REGISTRY: dict[str, type[XCommand]] = {}
#: What a command's Celery task calls with the command id: `xcommands.engine.process`, handed
#: over by the app's `ready()` (the engine sits above this module and imports the registry).
_PROCESS: Callable[[int], str] | None = None


def run_commands_with(process: Callable[[int], str]) -> None:
    """Set what command tasks run (called once per process from `XcommandsConfig.ready`)."""
    global _PROCESS
    _PROCESS = process


def registered_command(name: str) -> type[XCommand]:
    """The command class registered under name, or UnknownCommand."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownCommand(f"no command is registered as {name!r}") from None


def registered_names() -> list[str]:
    """Every registered command name, sorted."""
    return sorted(_REGISTRY)


class XCommand(ABC):
    """A state-machine step run under its job key: load, check, execute, in a fixed order.

    Subclasses are dataclasses whose fields are the command's JSON arguments; they define
    `job_key()` and `execute()`, and may override `load_state`, `verify_precondition`
    (raise PreconditionFailed to skip), `rollback` and the class attributes below.
    """

    #: Registered name, also the Celery task name; defaults to "<app>.<ClassName>".
    command_name: ClassVar[str] = ""
    #: Retries after the first attempt for transient failures.
    max_retries: ClassVar[int] = 3
    #: Run load/verify/execute and the completion in one transaction (effects commit once).
    #: Commands doing long external work set this to False: their effects are then
    #: at-least-once and must be idempotent.
    atomic: ClassVar[bool] = True
    #: Backoff before the retry after failed attempt n (1-based): uniform in [c/2, c] with
    #: c = min(cap, base * 2**(n-1)) ("equal jitter": spread out, yet never a hot loop).
    backoff_base_seconds: ClassVar[float] = 1.0
    backoff_cap_seconds: ClassVar[float] = 300.0
    #: Exceptions worth retrying. Everything else is permanent (straight to rollback).
    transient_exceptions: ClassVar[tuple[type[BaseException], ...]] = (
        TransientError,
        OperationalError,
        ConnectionError,
        TimeoutError,
    )
    #: Exceptions never worth retrying even if they subclass a transient one.
    permanent_exceptions: ClassVar[tuple[type[BaseException], ...]] = (
        PermanentError,
        IntegrityError,
        ValidationError,
        ObjectDoesNotExist,
        ValueError,
        TypeError,
        KeyError,
    )

    celery_task: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # ABCMeta sets __abstractmethods__ only after __init_subclass__ runs: look ourselves.
        still_abstract = any(
            getattr(getattr(cls, attr, None), "__isabstractmethod__", False)
            for attr in ("job_key", "execute")
        )
        if cls.__dict__.get("abstract", False) or still_abstract:
            return  # intermediate base classes are not commands
        name = cls.__dict__.get("command_name") or f"{cls.__module__.split('.')[0]}.{cls.__name__}"
        if not name.endswith("XCommand"):
            raise TypeError(f"command class {cls.__qualname__}: its name must end in 'XCommand'")
        existing = _REGISTRY.get(name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise TypeError(f"two command classes are registered as {name!r}")
        cls.command_name = name
        _REGISTRY[name] = cls
        cls.celery_task = _make_task(name)

    # --- what subclasses provide -------------------------------------------------------
    @abstractmethod
    def job_key(self) -> str:
        """The key that orders this command: commands of one key run one at a time, FIFO."""

    def load_state(self) -> None:
        """Load what the command acts on (called under the key, before the precondition)."""
        return None

    def verify_precondition(self) -> None:
        """Raise PreconditionFailed when the command no longer applies; it is then skipped."""
        return None

    @abstractmethod
    def execute(self) -> Any:
        """Do the work; return a JSON-serialisable result (or None)."""

    def rollback(self, error: str) -> None:
        """Undo partial effects after the last attempt failed; raising here is a double fault."""
        return None

    # --- fixed machinery ---------------------------------------------------------------
    @final
    def run(self) -> Any:
        """The fixed run sequence: load state, verify the precondition, execute."""
        self.load_state()
        self.verify_precondition()
        return self.execute()

    def to_params(self) -> dict[str, Any]:
        """The command's arguments as JSON (the dataclass fields)."""
        if not dataclasses.is_dataclass(self):
            raise TypeError(f"{type(self).__name__} must be a dataclass (or override to_params)")
        return dataclasses.asdict(self)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> XCommand:
        """Rebuild the command from its stored arguments."""
        return cls(**params)

    def is_atomic(self) -> bool:
        """Whether this instance runs inside one transaction with its completion."""
        return self.atomic

    @classmethod
    def classify(cls, exc: BaseException) -> str:
        """'transient' (retry with backoff) or 'permanent' (no retry, straight to rollback)."""
        if isinstance(exc, cls.permanent_exceptions) and not isinstance(exc, TransientError):
            return "permanent"
        if isinstance(exc, cls.transient_exceptions):
            return "transient"
        if isinstance(exc, DatabaseError):
            return "transient"
        return "permanent"

    @classmethod
    def backoff_seconds(cls, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before the retry that follows failed attempt `attempt` (1-based), equal jitter."""
        ceiling = min(cls.backoff_cap_seconds, cls.backoff_base_seconds * (2 ** max(0, attempt - 1)))
        return (rng or random).uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not crypto


def _make_task(name: str) -> Any:
    """The Celery task that runs commands of this class: it only carries the command id."""

    def run_command(command_id: int, key: str = "", params: dict[str, Any] | None = None) -> str:
        # key and params are for Flower only: the database row is the source of truth.
        if _PROCESS is None:
            raise RuntimeError("the command engine is not set up: django.setup() runs XcommandsConfig.ready()")
        result = _PROCESS(command_id)
        if result in ("failed", "parked"):  # recorded (rolled back, or parked for an operator): Flower shows it failed
            raise CommandFailed(f"command {command_id} ({name}) {result}; its error and attempts are on its page")
        return result

    run_command.__name__ = name.rsplit(".", 1)[-1]
    run_command.__doc__ = f"Run one queued {name} under its job key."
    # `throws`: an expected failure, logged by the worker without a traceback (the command's row has it).
    return app.task(name=name, ignore_result=True, acks_late=True, throws=(CommandFailed,))(run_command)
