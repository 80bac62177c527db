"""The fs action (spec 3.2.4) and every action's `prepare`, on fsspec, with Oozie's semantics and error codes.

mkdir makes missing parents and is a no-op when the path exists; delete is recursive and
a missing path is fine; move takes a target without a file system (the source's) or with
the source's, puts the source inside an existing target directory, and needs the target's
parent; chmod (local files only: FS015) takes 755 or -rwxr-xr-x, applies to a directory and
its files unless dir-files is false, to every level with recursive; touchz creates an empty
file or touches an empty one. delete, move sources and chmod take glob patterns.
Every path is checked (roots, file system) before the first operation runs.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from workflows.actions.base import OK, ActionContext, ActionResult, error, exception_text
from workflows.actions.storage import Location, StorageError, expand, has_glob, locate, protocol_of
from workflows.settings import is_transient

Operation = Mapping[str, Any]


def _mkdir(location: Location) -> None:
    if location.fs.exists(location.path):
        return  # Oozie: "already exist, no need for creation", even when it is a file
    location.fs.makedirs(location.path, exist_ok=True)
    if not location.fs.isdir(location.path):
        raise StorageError("FS004", f"mkdir, path [{location.url}] could not create directory")


def _delete(location: Location) -> None:
    for match in expand(location):
        if match.fs.exists(match.path):
            match.fs.rm(match.path, recursive=True)
            if match.fs.exists(match.path):
                raise StorageError("FS005", f"delete, path [{match.url}] could not delete path")


def _target(source: Location, target: str) -> Location:
    """The move target: without a file system it is on the source's; with one, it must be the source's (FS007)."""
    target = target.strip()
    parts = urlsplit(source.url)
    if protocol_of(target):
        other = urlsplit(target)
        if (other.scheme.lower(), other.netloc) != (parts.scheme.lower(), parts.netloc):
            raise StorageError("FS007", f"move, target NN URI different from that of source [{target}]")
        return locate(target)
    if not target.startswith("/"):
        raise StorageError("FS011", f"Path [{target}] cannot be relative")
    return locate(f"{parts.scheme}://{parts.netloc}{target}")


def _already_moved(source: Location, target: Location) -> bool:
    """A plain (no glob) source that is gone while what it would have become exists: an earlier run moved it.

    A node relaunched after its worker was lost runs its `move` again; Hadoop's rename would
    fail (FS006), which made the example pipeline's cleanup fail on a re-run. Here it succeeds.
    """
    if has_glob(source):
        return False
    fs = target.fs
    if fs.isdir(target.path):
        return bool(fs.exists(posixpath.join(target.path, posixpath.basename(source.path.rstrip("/")))))
    return bool(fs.exists(target.path))


def _move(source: Location, target: Location) -> None:
    sources = expand(source)
    if not sources:
        if _already_moved(source, target):
            return
        raise StorageError("FS006", f"move, source path [{source.url}] does not exist (nor does [{target.url}])")
    fs = source.fs
    target_is_dir = bool(target.fs.isdir(target.path))
    if len(sources) > 1 and not target_is_dir:
        raise StorageError("FS012", "move, could not rename multiple sources to the same target name")
    for item in sources:
        destination = posixpath.join(target.path, posixpath.basename(item.path.rstrip("/"))) if target_is_dir else target.path
        parent = posixpath.dirname(destination.rstrip("/"))
        # Hadoop's rename refuses an existing target file and a missing parent: it answers false
        if fs.exists(destination):
            raise StorageError("FS008", f"move, could not move [{item.url}] to [{target.url}]: [{destination}] exists")
        if parent and not fs.isdir(parent):
            raise StorageError(
                "FS008", f"move, could not move [{item.url}] to [{target.url}]: its directory [{parent}] does not exist"
            )
        fs.mv(item.path, destination, recursive=True)


def permission_bits(permissions: str, url: str) -> int:
    """Oozie's chmod mask: three octal digits (755) or ten symbolic characters (-rwxr-xr-x, sticky t/T)."""
    text = permissions.strip()
    if len(text) == 3 and all(ch in "01234567" for ch in text):
        return int(text, 8)
    if len(text) == 10:
        mode = 0
        for i, ch in enumerate(text[1:]):
            bit = 1 << (8 - i)
            if ch == "rwx"[i % 3]:
                mode |= bit
            elif i == 8 and ch in "tT":
                mode |= stat.S_ISVTX | (bit if ch == "t" else 0)
            elif ch != "-":
                break
        else:
            return mode
    raise StorageError("FS010", f"chmod, path [{url}] invalid permissions mask [{permissions}]")


def _chmod(location: Location, permissions: str, dir_files: bool, recursive: bool) -> None:
    if not location.local:
        raise StorageError(
            "FS015", f"chmod, path [{location.url}]: permissions can be set on local files (file://) only"
        )
    mode = permission_bits(permissions, location.url)
    matches = expand(location)
    if not matches:
        raise StorageError("FS009", f"chmod, path(s) that matches [{location.url}] does not exist")
    for match in matches:
        for path in _chmod_targets(match.path, dir_files, recursive):
            os.chmod(path, mode)


def _chmod_targets(root: str, dir_files: bool, recursive: bool) -> list[str]:
    """The path, and with dir_files its entries (every level with recursive); symbolic links are left alone."""
    if not (dir_files and os.path.isdir(root)) or os.path.islink(root):
        return [root]
    found = [root]
    if not recursive:
        return found + [entry.path for entry in os.scandir(root) if not entry.is_symlink()]
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories + files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                found.append(path)
    return found


def _touchz(location: Location) -> None:
    fs = location.fs
    if fs.exists(location.path):
        if fs.isdir(location.path):
            raise StorageError("Exception", f"{location.url} is a directory")
        if int(fs.info(location.path).get("size") or 0) != 0:
            raise StorageError("Exception", f"{location.url} must be a zero-length file")
        try:
            fs.touch(location.path, truncate=False)  # a touch: a new modification time
        except (NotImplementedError, ValueError):
            fs.touch(location.path, truncate=True)  # stores without times: the file is empty anyway
        return
    parent = posixpath.dirname(location.path.rstrip("/"))
    if parent:
        fs.makedirs(parent, exist_ok=True)  # Hadoop's create makes missing parents
    fs.touch(location.path, truncate=True)


def _plan(operation: Operation) -> Callable[[], None]:
    """Check an operation's paths now; the returned step runs it."""
    op = str(operation.get("op", ""))
    if op == "move":
        source = locate(str(operation.get("source", "")))
        target = _target(source, str(operation.get("target", "")))
        return lambda: _move(source, target)
    location = locate(str(operation.get("path", "")))
    if op == "mkdir":
        return lambda: _mkdir(location)
    if op == "delete":
        return lambda: _delete(location)
    if op == "touchz":
        return lambda: _touchz(location)
    if op == "chmod":
        permissions = str(operation.get("permissions", ""))
        permission_bits(permissions, location.url)  # a bad mask fails before anything runs
        dir_files, recursive = bool(operation.get("dir_files", True)), bool(operation.get("recursive", False))
        return lambda: _chmod(location, permissions, dir_files, recursive)
    raise StorageError("FS000", f"fs operation [{op}] is not supported")


def run_operations(operations: Sequence[Operation]) -> None:
    """Run the operations in order, after checking every path (StorageError or OSError on failure)."""
    steps = [_plan(operation) for operation in operations]
    for step in steps:
        step()


def _result_of(operations: Sequence[Operation]) -> ActionResult | None:
    try:
        run_operations(operations)
    except StorageError as exc:
        return error(exc.code, exc.message)
    except OSError as exc:
        return error(type(exc).__name__, exception_text(exc), transient=is_transient(exc))
    return None


def prepare(spec: Mapping[str, Any]) -> ActionResult | None:
    """Run an action's `prepare` (delete, mkdir); None when it went well, else the ERROR result."""
    operations = [op for op in spec.get("prepare", ()) if isinstance(op, Mapping)]
    refused = [op for op in operations if op.get("op") not in ("delete", "mkdir")]
    if refused:
        return error("FS000", f"prepare takes delete and mkdir only, not [{refused[0].get('op')}]")
    return _result_of(operations)


def execute(spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
    """Run an fs action's operations: OK, or ERROR with Oozie's FS0xx code (or the error's class name)."""
    outcome = _result_of([op for op in spec.get("operations", ()) if isinstance(op, Mapping)])
    return outcome or ActionResult(OK, external_status=OK)
