"""kernel.archives: a tar.gz unpacked within limits, only plain files and directories, and nothing left after a refusal."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
from pathlib import Path

import pytest

from kernel.archives import ArchiveError, ArchiveTooLarge, Limits, entry_name, place, unpack
from tests.support.archives import HOSTILE, WORKFLOW, application, entry, tar_gz

ROOMY = Limits(max_bytes=1_000_000, max_unpacked_bytes=1_000_000, max_entries=100)


class Source(io.BytesIO):
    """A body that counts how many bytes were asked of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.taken += len(data)
        return data


def leftovers(workdir: Path) -> list[Path]:
    """Everything under the work directory (it exists: unpack creates it)."""
    return sorted(workdir.rglob("*"))


def test_an_application_is_unpacked_with_plain_modes(tmp_path: Path) -> None:
    """Files, directories and an executable script land in a new directory; modes 0644/0755, counts right."""
    unpacked = unpack(io.BytesIO(application()), tmp_path / "work", ROOMY)
    assert unpacked.path.parent == tmp_path / "work" and unpacked.path.name.startswith(".unpacking-")
    assert (unpacked.path / "workflow.xml").read_bytes() == WORKFLOW
    script = unpacked.path / "lib" / "run.sh"
    assert script.read_bytes().startswith(b"#!/bin/sh")
    assert stat.S_IMODE(script.stat().st_mode) & 0o100
    assert not stat.S_IMODE((unpacked.path / "workflow.xml").stat().st_mode) & 0o111
    assert (unpacked.files, unpacked.bytes) == (2, len(WORKFLOW) + len(b"#!/bin/sh\necho hi\n"))


def test_modes_are_not_taken_from_the_archive(tmp_path: Path) -> None:
    """A setuid, world-writable member is written 0755: the archive chooses no special bits."""
    unpacked = unpack(io.BytesIO(tar_gz(entry("x.sh", b"x", mode=0o4777))), tmp_path / "work", ROOMY)
    assert stat.S_IMODE((unpacked.path / "x.sh").stat().st_mode) == 0o755


@pytest.mark.parametrize("kind", sorted(HOSTILE), ids=sorted(HOSTILE))
def test_hostile_archives_are_refused_and_leave_nothing(tmp_path: Path, kind: str) -> None:
    """Each hostile kind is an ArchiveError naming the problem; the work directory is empty afterwards."""
    with pytest.raises(ArchiveError):
        unpack(io.BytesIO(HOSTILE[kind]()), tmp_path / "work", ROOMY)
    assert leftovers(tmp_path / "work") == []
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/escaped.txt").exists()  # noqa: S108


@pytest.mark.parametrize(
    ("name", "expected"),
    [("workflow.xml", "workflow.xml"), ("./lib//x.jar", "lib/x.jar"), ("./", ""), ("a/./b/", "a/b")],
    ids=["plain", "dot-and-double-slash", "top-directory", "inner-dot"],
)
def test_plain_entry_names_are_normalized(name: str, expected: str) -> None:
    """`.` segments and repeated slashes go; the archive's own top directory is ""."""
    assert entry_name(name) == expected


@pytest.mark.parametrize("name", ["../x", "a/../../x", "/etc/x", "a\\b", "a\x00b", "a\nb", "x" * 256, "a/" * 600],
                         ids=["dot-dot", "inner-dot-dot", "absolute", "backslash", "nul", "newline", "long-segment",
                              "long-name"])
def test_other_entry_names_are_refused(name: str) -> None:
    """Anything that could leave the directory or that a file system might read otherwise is refused by name."""
    with pytest.raises(ArchiveError, match="entry"):
        entry_name(name)


def test_the_entry_count_is_bounded(tmp_path: Path) -> None:
    """One entry more than max_entries is refused; exactly max_entries passes."""
    four = tar_gz(*(entry(f"f{n}", b"x") for n in range(4)))
    assert unpack(io.BytesIO(four), tmp_path / "ok", Limits(1000, 1000, 4)).files == 4
    with pytest.raises(ArchiveError, match="more than 3 entries"):
        unpack(io.BytesIO(four), tmp_path / "work", Limits(1000, 1000, 3))
    assert leftovers(tmp_path / "work") == []


def test_the_unpacked_size_is_bounded(tmp_path: Path) -> None:
    """Contents summing to one byte over max_unpacked_bytes are refused before the last file is written."""
    archive = tar_gz(entry("a", b"x" * 600), entry("b", b"y" * 401))
    with pytest.raises(ArchiveError, match="more than 1000 bytes"):
        unpack(io.BytesIO(archive), tmp_path / "work", Limits(100_000, 1000, 10))
    assert leftovers(tmp_path / "work") == []
    assert unpack(io.BytesIO(archive), tmp_path / "ok", Limits(100_000, 1001, 10)).bytes == 1001


def test_the_compressed_body_is_bounded_while_it_is_read(tmp_path: Path) -> None:
    """ArchiveTooLarge once max_bytes have passed: at most one byte more is asked of the body."""
    archive = application(entry("noise.bin", bytes(range(256)) * 200))
    limit = len(archive) // 2
    body = Source(archive)
    with pytest.raises(ArchiveTooLarge, match=f"larger than {limit} bytes"):
        unpack(body, tmp_path / "work", Limits(limit, 10_000_000, 100))
    assert body.taken <= limit + 1
    assert leftovers(tmp_path / "work") == []


def test_a_header_claiming_gigabytes_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    """A pax header of 20 MB of zeros (a few kB compressed) stops at the unpacked stream's bound, not in memory."""
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = 20_000_000
    raw = header.tobuf(format=tarfile.USTAR_FORMAT) + bytes(20_000_000)
    bomb = gzip.compress(raw)
    assert len(bomb) < 100_000
    with pytest.raises(ArchiveError, match="the unpacked archive is larger than"):
        unpack(io.BytesIO(bomb), tmp_path / "work", Limits(1_000_000, 1000, 10))
    assert leftovers(tmp_path / "work") == []


def test_place_renames_and_cleans_up_when_it_cannot(tmp_path: Path) -> None:
    """The unpacked directory becomes the target in one rename; a rename that fails removes it."""
    first = unpack(io.BytesIO(application()), tmp_path / "work", ROOMY)
    target = place(first, tmp_path / "apps" / "ann" / "app-1")
    assert (target / "workflow.xml").is_file() and not first.path.exists()
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    second = unpack(io.BytesIO(application()), tmp_path / "work", ROOMY)
    (tmp_path / "apps" / "ann" / "taken").mkdir()
    (tmp_path / "apps" / "ann" / "taken" / "x").write_text("x")  # a non-empty directory: rename refuses it
    with pytest.raises(OSError):
        place(second, tmp_path / "apps" / "ann" / "taken")
    assert not second.path.exists() and leftovers(tmp_path / "work") == []
