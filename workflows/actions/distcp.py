"""The distcp action (DG_DistCpActionExtension, distcp-action 1.0): a copy between two storage URIs, with fsspec.

A site action type (workflows.actions.site) registered by default. `<arg>`s are Hadoop
DistCp's command line: options, then one or more sources (globs allowed), then the target.
Every path is checked against WORKFLOW_FS_ROOTS like the fs action's (workflows.actions.storage),
each file of a tree again. Files and directories are copied recursively, across file systems
(file:// to s3://, memory://...), and each copied file is compared with its source after the
copy (size and MD5; sizes only with -skipcrccheck).

Options: `-update` copies only files whose size or content differs, `-overwrite` always
copies; both put a source directory's contents in the target (Hadoop's rule). Without them a
source goes inside an existing target directory, or becomes the target, and files already
at the target are kept (Hadoop skips them). Tuning options of Hadoop's job (-m, -bandwidth,
-strategy, -p..., -i, -async...) are ignored with a note in the try's log; any other option
(-delete, -append, -diff, -filters...) is refused at submission, or when the node runs if it
came from an expression.

Resumable: a file is written under a temporary name beside its target and renamed once
complete and verified, and a new target is assembled in `<target>.distcp-tmp` and renamed at
the end, so a try relaunched after a lost worker finds only whole files, skips those already
copied and equal, and goes on. (-overwrite copies everything again, as it says.)
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lxml import etree

from workflows.actions.base import OK, ActionContext, ActionResult, error
from workflows.actions.site import SiteAction, child_texts, refuse
from workflows.actions.storage import Location, StorageError, expand, locate

log = logging.getLogger(__name__)

CHUNK = 1 << 20
STAGING = ".distcp-tmp"
MODES = ("-update", "-overwrite")
#: Hadoop DistCp options about its MapReduce job: meaningless here, ignored with a note.
IGNORED_FLAGS = frozenset({"-i", "-async", "-direct", "-v", "-verboseLog", "-skipcrccheck"})
IGNORED_WITH_VALUE = frozenset({"-m", "-bandwidth", "-strategy", "-numListstatusThreads", "-log", "-blocksperchunk",
                                "-copybuffersize", "-mapredSslConf"})


class DistcpArgsError(ValueError):
    """The `<arg>`s are not a copy this action makes."""


class Stopped(Exception):
    """The run's lease was lost (site kill): stop between chunks."""


@dataclass(frozen=True)
class Command:
    """The `<arg>`s read: the mode ('', -update, -overwrite), sources, target, ignored options, checksums compared."""

    mode: str
    sources: tuple[str, ...]
    target: str
    ignored: tuple[str, ...]
    checksums: bool


def read_args(args: list[str]) -> Command:
    """DistCp's command line as a copy; DistcpArgsError naming what is refused."""
    mode, ignored, paths, checksums = "", [], [], True
    i = 0
    while i < len(args):
        arg = args[i].strip()
        i += 1
        if not arg.startswith("-"):
            paths.append(arg)
        elif arg in MODES:
            if mode and mode != arg:
                raise DistcpArgsError("-update and -overwrite cannot be used together")
            mode = arg
        elif arg in IGNORED_FLAGS or arg.startswith("-p"):
            ignored.append(arg)
            checksums = checksums and arg != "-skipcrccheck"
        elif arg in IGNORED_WITH_VALUE:
            if i >= len(args):
                raise DistcpArgsError(f"option {arg} needs a value")
            ignored.append(f"{arg} {args[i].strip()}")
            i += 1
        else:
            raise DistcpArgsError(f"option {arg} is not supported (supported: -update, -overwrite; ignored: "
                                  f"{', '.join(sorted(IGNORED_FLAGS | IGNORED_WITH_VALUE))}, -p...)")
    if len(paths) < 2:
        raise DistcpArgsError("distcp needs at least one source and a target <arg>")
    return Command(mode, tuple(paths[:-1]), paths[-1], tuple(ignored), checksums)


@dataclass
class _Copy:
    """One run's copy: its mode, its counters, and the flag its kill sets."""

    command: Command
    stop: threading.Event
    copied: int = 0
    skipped: int = 0
    bytes: int = 0

    def check(self) -> None:
        if self.stop.is_set():
            raise Stopped

    def _digest(self, location: Location, path: str) -> str:
        digest = hashlib.md5(usedforsecurity=False)
        with location.fs.open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                self.check()
                digest.update(chunk)
        return digest.hexdigest()

    def equal(self, source: Location, target: Location, path: str) -> bool:
        """Same size and (unless -skipcrccheck) same MD5."""
        if source.fs.size(source.path) != target.fs.size(path):
            return False
        return not self.command.checksums or self._digest(source, source.path) == self._digest(target, path)

    def file(self, source: Location, target: Location, path: str) -> None:
        """Copy one file to `path` on the target's file system: through a temporary name, verified, then renamed."""
        self.check()
        fs = target.fs
        if fs.exists(path):
            if self.command.mode == "-update" and self.equal(source, target, path):
                self.skipped += 1
                return
            if not self.command.mode:  # Hadoop keeps what is there (a relaunched try: a whole file)
                self.skipped += 1
                return
        parent = posixpath.dirname(path)
        temporary = posixpath.join(parent, f".{posixpath.basename(path)}{STAGING}")
        target.at(temporary)  # under the roots
        fs.makedirs(parent, exist_ok=True)
        digest, size = hashlib.md5(usedforsecurity=False), 0
        with source.fs.open(source.path, "rb") as reader, fs.open(temporary, "wb") as writer:
            while chunk := reader.read(CHUNK):
                self.check()
                digest.update(chunk)
                size += len(chunk)
                writer.write(chunk)
        expected = source.fs.size(source.path)
        if fs.size(temporary) != size or size != expected:
            raise StorageError("DISTCP_VERIFY", f"copy of [{source.url}] has {fs.size(temporary)} bytes, "
                                                f"its source {expected}")
        if self.command.checksums and self._digest(target, temporary) != digest.hexdigest():
            raise StorageError("DISTCP_VERIFY", f"copy of [{source.url}] differs from its source (MD5)")
        if fs.exists(path):
            fs.rm(path)
        fs.mv(temporary, path)
        self.copied += 1
        self.bytes += size

    def tree(self, source: Location, target: Location, root: str) -> None:
        """Copy a directory's contents (recursively, empty directories too) into `root`."""
        fs = target.fs
        fs.makedirs(root, exist_ok=True)
        base = source.path.rstrip("/")
        for path, info in sorted(source.fs.find(base, withdirs=True, detail=True).items()):
            self.check()
            relative = posixpath.relpath(str(path), base)
            if relative == "." or posixpath.basename(relative).endswith(STAGING):
                continue
            destination = posixpath.join(root, relative)
            target.at(destination)
            if info.get("type") == "directory":
                fs.makedirs(destination, exist_ok=True)
            else:
                self.file(source.at(str(path)), target, destination)

    def item(self, source: Location, target: Location, path: str) -> None:
        """A source (file or directory) copied to `path`."""
        if source.fs.isdir(source.path):
            self.tree(source, target, path)
        else:
            self.file(source, target, path)


def _sources(command: Command) -> list[Location]:
    found: list[Location] = []
    for url in command.sources:
        matches = expand(locate(url))
        if not matches:
            raise StorageError("DISTCP_SOURCE", f"source [{url}] does not exist")
        found += matches
    return found


def _inside(source: Location, target: Location) -> bool:
    same = source.protocol == target.protocol and source.fs is target.fs
    root = source.path.rstrip("/")
    return same and (target.path.rstrip("/") == root or target.path.startswith(root + "/"))


def copy(command: Command, stop: threading.Event) -> _Copy:
    """Run the copy (StorageError for a refused path or a failed check; Stopped when killed)."""
    run = _Copy(command, stop)
    target = locate(command.target)
    sources = _sources(command)
    for source in sources:
        if _inside(source, target):
            raise StorageError("DISTCP_TARGET", f"target [{target.url}] is inside source [{source.url}]")
    fs, path = target.fs, target.path.rstrip("/") or "/"
    many = len(sources) > 1
    if command.mode:  # Hadoop: a directory's contents go into the target
        for source in sources:
            if source.fs.isdir(source.path):
                run.tree(source, target, path)
            else:
                inside = many or fs.isdir(path)
                run.file(source, target, posixpath.join(path, posixpath.basename(source.path)) if inside else path)
    elif fs.isdir(path):  # each source inside the existing directory
        for source in sources:
            run.item(source, target, posixpath.join(path, posixpath.basename(source.path.rstrip("/"))))
    elif fs.exists(path):
        if many or source_is_dir(sources[0]):
            raise StorageError("DISTCP_TARGET", f"target [{target.url}] is a file")
        run.skipped += 1  # Hadoop keeps an existing file
    else:  # a new target: assembled aside, renamed whole (a relaunched try resumes in the staging path)
        staging = path + STAGING
        target.at(staging)
        if many:
            for source in sources:
                run.item(source, target, posixpath.join(staging, posixpath.basename(source.path.rstrip("/"))))
        else:
            run.item(sources[0], target, staging)
        fs.mv(staging, path, recursive=True)
    return run


def source_is_dir(source: Location) -> bool:
    """Whether a source is a directory."""
    return bool(source.fs.isdir(source.path))


class DistcpAction(SiteAction):
    """distcp-action 1.0: `<arg>`s (options, sources, target); prepare and configuration as every action."""

    action_type = "distcp"
    schemas = {"uri:oozie:distcp-action:1.0": "xsd/distcp-action-1.0.xsd"}
    configurable = True

    def __init__(self) -> None:
        self._stops: dict[tuple[str, str], threading.Event] = {}
        self._lock = threading.Lock()

    def parse(self, element: etree._Element, *, node: str, source: str) -> dict[str, Any]:
        """The spec: {"args": [str]}; literal options and a missing source or target refused now."""
        args = [arg.strip() for arg in child_texts(element, "arg")]
        try:  # an expression stands for a path here (or an option's value): it is read again when the node runs
            read_args(["${...}" if "${" in arg else arg for arg in args])
        except DistcpArgsError as exc:
            raise refuse(element, node, source, f"distcp: {exc}") from None
        return {"args": args}

    def execute(self, spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
        """Copy; OK with the counts in the try's log, ERROR naming the path or check that failed."""
        try:
            command = read_args([str(arg) for arg in spec.get("args", ())])
        except DistcpArgsError as exc:
            return error("DISTCP_ARGS", f"distcp action [{context.node_name}]: {exc}")
        for option in command.ignored:
            log.warning("distcp option %s ignored (it tunes Hadoop's copy job)", option)
        key = (context.workflow_id, context.node_name)
        stop = threading.Event()
        with self._lock:
            self._stops[key] = stop
        try:
            run = copy(command, stop)
        except Stopped:
            return error("LEASE_LOST", f"distcp action [{context.node_name}] stopped: this worker lost the node's lease",
                         external_status="KILLED")
        except StorageError as exc:
            return error(exc.code, exc.message)
        finally:
            with self._lock:
                self._stops.pop(key, None)
        log.info("distcp %s -> %s: %d files copied (%d bytes), %d skipped", ", ".join(command.sources), command.target,
                 run.copied, run.bytes, run.skipped)
        return ActionResult(OK, external_status="SUCCEEDED")

    def kill(self, spec: Mapping[str, Any], context: ActionContext) -> None:
        """Stop the copy at its next chunk (what is whole stays; a relaunched try goes on from there)."""
        with self._lock:
            stop = self._stops.get((context.workflow_id, context.node_name))
        if stop is not None:
            stop.set()
