"""Ingest manifests (checkm 0.7): the documented format, round trips, every refusal, URL resolution, fuzzing."""

from __future__ import annotations

import doctest
import hashlib
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batches.definitions import (
    BATCH_MANIFEST,
    CONTAINER_MANIFEST,
    MANIFEST_KINDS,
    OBJECT_MANIFEST,
    SUPPORTED_DIGESTS,
    Digest,
    FileSpec,
    ManifestError,
    ObjectSpec,
    hasher,
    normalize_algorithm,
    parse_manifest,
    resolve_url,
    write_batch_manifest,
    write_container_manifest,
    write_manifest,
    write_object_manifest,
)
from batches.definitions import manifest as manifest_module

MD5_A = "0cc175b9c0f1b6a831c399e269772661"  # md5("a")
SHA1_A = hashlib.sha1(b"a", usedforsecurity=False).hexdigest()
SHA256_A = hashlib.sha256(b"a").hexdigest()
SHA512_A = hashlib.sha512(b"a").hexdigest()
OBJECT_PROFILE = "http://uc3.cdlib.org/registry/ingest/manifest/mrt-ingest-manifest"
FIELDS = (
    "nfo:fileUrl | nfo:hashAlgorithm | nfo:hashValue | nfo:fileSize | nfo:fileName"
    " | mrt:primaryIdentifier | mrt:localIdentifier"
)
DOCUMENTED = f"""#%checkm_0.7
#%profile | {OBJECT_PROFILE}
#%prefix | mrt: | http://merritt.cdlib.org/terms#
#%prefix | nfo: | http://www.semanticdesktop.org/ontologies/2007/03/22/nfo#
#%fields | {FIELDS}
file:///data/a.txt | md5 | {MD5_A} | 1 | a.txt | | loc001
#%eof
"""


def checkm(*rows: str, fields: str | None = FIELDS, profile: str | None = OBJECT_PROFILE, eof: bool = True) -> str:
    """A manifest with these data rows (line 1 checkm, 2 profile, 3 fields, rows from line 4 when both are given)."""
    lines = ["#%checkm_0.7"]
    if profile is not None:
        lines.append(f"#%profile | {profile}")
    if fields is not None:
        lines.append(f"#%fields | {fields}")
    lines += rows
    if eof:
        lines.append("#%eof")
    return "\n".join(lines) + "\n"


def refused(text: str | bytes, **kwargs: object) -> ManifestError:
    """The ManifestError parsing raises (the test fails if it parses)."""
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text, **kwargs)  # type: ignore[arg-type]
    return caught.value


# The documented format ----------------------------------------------------------------------


def test_the_documented_example_is_one_object_with_one_file() -> None:
    """The module docstring's example: an object manifest by its profile, one file, local id loc001."""
    manifest = parse_manifest(DOCUMENTED)
    assert manifest.kind == OBJECT_MANIFEST
    assert manifest.objects == (
        ObjectSpec(("loc001",), "", (FileSpec("file:///data/a.txt", "a.txt", 1, Digest("md5", MD5_A)),)),
    )
    assert manifest.headers == {
        "profile": (OBJECT_PROFILE,),
        "prefix": (
            "mrt: | http://merritt.cdlib.org/terms#",
            "nfo: | http://www.semanticdesktop.org/ontologies/2007/03/22/nfo#",
        ),
        "fields": (FIELDS,),
    }


def test_the_module_docstring_examples_hold() -> None:
    """The doctests in the format's documentation pass, so the documentation stays true."""
    result = doctest.testmod(manifest_module)
    assert result.attempted >= 5 and result.failed == 0


def test_comments_blank_lines_crlf_and_a_byte_order_mark_are_ignored() -> None:
    """`#` lines are comments, blank lines and CRs vanish, a UTF-8 BOM is skipped."""
    text = "\ufeff" + checkm(
        "# a comment | with a pipe",
        "",
        "   ",
        f"file:///data/a.txt | md5 | {MD5_A}",
        "#another comment",
    ).replace("\n", "\r\n")
    manifest = parse_manifest(text.encode("utf-8"))
    assert [spec.name for spec in manifest.objects[0].files] == ["a.txt"]
    assert "another comment" not in str(manifest.headers)


def test_fewer_cells_are_padded_and_the_name_comes_from_the_url() -> None:
    """A row of one cell is valid: no digest, no size, fileName = last URL segment, percent-decoded."""
    manifest = parse_manifest(checkm("file:///data/dir/caf%C3%A9%20menu.pdf"))
    assert manifest.objects[0].files == (FileSpec("file:///data/dir/caf%C3%A9%20menu.pdf", "café menu.pdf"),)


def test_several_local_ids_are_kept_in_order_without_blanks_or_repeats() -> None:
    """`mrt:localIdentifier` is ';'-separated: each id stripped, empty ones and repeats dropped."""
    manifest = parse_manifest(checkm("file:///a | | | | | | ark:/1; loc-2 ;;loc-3; loc-2"))
    assert manifest.objects[0].local_ids == ("ark:/1", "loc-2", "loc-3")


def test_headers_other_than_fields_and_profile_are_recorded_not_interpreted() -> None:
    """Unknown `#%` headers and prefixes are kept in `headers`, one value per occurrence."""
    manifest = parse_manifest(checkm("#%creator | someone | else", "#%Note", "file:///a"))
    assert manifest.headers["creator"] == ("someone | else",)
    assert manifest.headers["note"] == ("",)


@pytest.mark.parametrize(
    ("spelling", "algorithm"),
    [("md5", "md5"), ("MD5", "md5"), ("SHA1", "sha1"), ("sha-1", "sha1"), ("SHA-256", "sha256"), ("sha512", "sha512")],
    ids=["md5", "upper-case", "sha1", "hyphenated-sha1", "hyphenated-sha256", "sha512"],
)
def test_digest_algorithms_are_normalized(spelling: str, algorithm: str) -> None:
    """Algorithm names are case-insensitive, `sha-256` is `sha256`; hex values become lower case."""
    value = {"md5": MD5_A, "sha1": SHA1_A, "sha256": SHA256_A, "sha512": SHA512_A}[algorithm]
    manifest = parse_manifest(checkm(f"file:///a | {spelling} | {value.upper()}"))
    assert manifest.objects[0].files[0].digest == Digest(algorithm, value)
    assert normalize_algorithm(spelling) == algorithm


def test_hasher_gives_hashlib_objects_for_every_supported_digest() -> None:
    """`hasher` accepts any accepted spelling and hashes as hashlib does."""
    for algorithm in SUPPORTED_DIGESTS:
        digest = hasher(algorithm.upper())
        digest.update(b"a")
        assert digest.hexdigest() == hashlib.new(algorithm, b"a").hexdigest()
        assert len(digest.hexdigest()) == SUPPORTED_DIGESTS[algorithm]
    with pytest.raises(ManifestError, match="'crc32' is not supported"):
        hasher("crc32")


def test_digest_of_normalizes_and_digest_refuses_what_is_not_normalized() -> None:
    """`Digest.of` accepts spellings; a Digest built directly must already be normalized and valid."""
    assert Digest.of(" SHA-1 ", SHA1_A.upper()) == Digest("sha1", SHA1_A)
    for algorithm, value in [("MD5", MD5_A), ("md5", MD5_A.upper()), ("md5", "abc"), ("crc", MD5_A)]:
        with pytest.raises(ManifestError):
            Digest(algorithm, value)


# Kinds and round trips -------------------------------------------------------------------


def test_an_object_manifest_round_trips() -> None:
    """write_object_manifest then parse_manifest: the same object, every digest, size, MIME type and nested name."""
    files = (
        FileSpec("file:///data/a.txt", "a.txt", 1, Digest("md5", MD5_A), "text/plain"),
        FileSpec("https://example.org/x?y=1", "images/x.png", 0, Digest("sha1", SHA1_A), "image/png"),
        FileSpec("memory:///deposit/b", "images/deep/b", None, Digest("sha256", SHA256_A)),
        FileSpec("s3://bucket/c", "c", 12345678901234, Digest("sha512", SHA512_A)),
        FileSpec("file:///data/d", "d"),
    )
    text = write_object_manifest(
        files, local_ids="loc-1; loc-2", primary_id="ark:/13030/m5", title="Big hunt", creator="Seneca", date="2009"
    )
    manifest = parse_manifest(text, kind=OBJECT_MANIFEST)
    assert manifest.objects == (
        ObjectSpec(("loc-1", "loc-2"), "ark:/13030/m5", files, title="Big hunt", creator="Seneca", date="2009"),
    )
    assert write_manifest(OBJECT_MANIFEST, manifest.objects) == text


def test_a_manifest_of_manifests_round_trips() -> None:
    """write_batch_manifest then parse: one ObjectSpec per row, manifest_url set, no files."""
    objects = (
        ObjectSpec(("loc-1",), "", manifest_url="file:///batch/one.checkm", title="One", date="2009-09-01"),
        ObjectSpec(
            ("a", "b"), "ark:/1", manifest_url="memory://batch/two.checkm", creator="Someone",
            manifest_digest=Digest("sha256", SHA256_A), manifest_size=42,
        ),
    )
    manifest = parse_manifest(write_batch_manifest(objects))
    assert manifest.kind == BATCH_MANIFEST
    assert manifest.objects == objects
    assert all(spec.files == () for spec in manifest.objects)


def test_a_container_manifest_round_trips() -> None:
    """write_container_manifest then parse: one ObjectSpec per row, its container the only file."""
    objects = (
        ObjectSpec(("loc-1",), files=(FileSpec("file:///in/one.zip", "one.zip", 10, Digest("md5", MD5_A)),), container=True),
        ObjectSpec((), "ark:/2", (FileSpec("s3://b/two.tar.gz", "two.tar.gz"),), container=True, title="Two"),
    )
    manifest = parse_manifest(write_container_manifest(objects), kind=CONTAINER_MANIFEST)
    assert manifest.kind == CONTAINER_MANIFEST
    assert manifest.objects == objects


def test_a_merritt_batch_manifest_reads_as_a_manifest_of_manifests() -> None:
    """Merritt's sample batch manifest (names, creators and dates, no ids) reads as written."""
    text = checkm(
        "https://example.org/bigHunt.checkm |  |  |  |  | bigHunt.checkm |  |  | Tracy Seneca |  | 2009-09-01",
        profile="http://uc3.cdlib.org/registry/ingest/manifest/mrt-batch-manifest",
        fields=(
            "nfo:fileUrl | nfo:hashAlgorithm | nfo:hashValue | nfo:fileSize | nfo:fileLastModified | nfo:fileName"
            " | mrt:primaryIdentifier | mrt:localIdentifier | mrt:creator | mrt:title | mrt:date"
        ),
    )
    manifest = parse_manifest(text)
    assert manifest.objects == (
        ObjectSpec(manifest_url="https://example.org/bigHunt.checkm", creator="Tracy Seneca", date="2009-09-01"),
    )


@pytest.mark.parametrize("kind", MANIFEST_KINDS)
def test_the_caller_may_name_the_kind_without_a_profile(kind: str) -> None:
    """Without `#%profile` the caller's kind decides; a bare profile name is as good as its URL."""
    assert parse_manifest(checkm("file:///a.zip", profile=None), kind=kind).kind == kind
    assert parse_manifest(checkm("file:///a.zip", profile="mrt-ingest-manifest")).kind == OBJECT_MANIFEST


def test_an_object_manifest_accepts_rows_that_repeat_or_omit_its_ids() -> None:
    """Rows naming no id are fine; ids in another order are the same ids."""
    manifest = parse_manifest(checkm("file:///a | | | | | ark:/1 | x; y", "file:///b", "file:///c | | | | | ark:/1 | y;x"))
    assert manifest.objects[0].local_ids == ("x", "y") and manifest.objects[0].primary_id == "ark:/1"
    assert len(manifest.objects[0].files) == 3


# Refusals --------------------------------------------------------------------------------

TOO_MANY_CELLS = checkm("file:///a | md5 | " + MD5_A + " | 1 | a | | loc | extra")
REFUSALS = [
    ("truncated", checkm("file:///a", eof=False), 4, "truncated: its last line is not '#%eof'"),
    ("truncated-mid-row", checkm("file:///a", eof=False)[:-5], 4, "truncated"),
    ("empty", "", 1, "first line must be '#%checkm_0.7'"),
    ("bad-first-line", "#%checkm_0.6\n#%fields | nfo:fileUrl\nfile:///a\n#%eof\n", 1, "not '#%checkm_0.6'"),
    ("first-line-not-first", "\n" + checkm("file:///a"), 1, "first line must be"),
    ("text-after-eof", checkm("file:///a") + "\nfile:///b\n", 7, "text after '#%eof' on line 5"),
    ("comment-after-eof", checkm("file:///a") + "# late\n", 6, "text after '#%eof' on line 5"),
    ("two-eofs", checkm("file:///a") + "#%eof\n", 5, "'#%eof' is not the last line"),
    ("no-rows", checkm(), 4, "no data rows"),
    ("row-before-fields", checkm("file:///a", fields=None), 3, "data row before the '#%fields' header"),
    ("unknown-fields", checkm("file:///a", fields="nfo:fileUrl | nfo:colour | x"), 3,
     r"unknown fields 'nfo:colour', 'x' in '#%fields'"),
    ("repeated-field", checkm("file:///a", fields="nfo:fileUrl | nfo:fileSize | NFO:FILESIZE"), 3, "named twice"),
    ("no-url-field", checkm("a", fields="nfo:fileName"), 3, "does not name nfo:fileUrl"),
    ("empty-field", checkm("file:///a", fields="nfo:fileUrl | | nfo:fileSize"), 3, "unknown fields ''"),
    ("second-fields", checkm("#%fields | nfo:fileUrl", "file:///a"), 4, "a second '#%fields'"),
    ("nameless-header", checkm("#% | x", "file:///a"), 4, "header without a name"),
    ("too-many-cells", TOO_MANY_CELLS, 4, "8 cells, but '#%fields' names 7"),
    ("empty-url", checkm(" | md5 | " + MD5_A), 4, "fileUrl is empty"),
    ("bad-hex", checkm("file:///a | md5 | xyz"), 4, r"hashValue 'xyz' is not a md5 digest \(32 hex digits\)"),
    ("wrong-length", checkm(f"file:///a | sha1 | {MD5_A}"), 4, r"not a sha1 digest \(40 hex digits\)"),
    ("non-ascii-digits", checkm("file:///a | md5 | " + "٠" * 32), 4, "not a md5 digest"),
    ("algorithm-without-value", checkm("file:///a | sha256 |"), 4, "hashAlgorithm 'sha256' has no hashValue"),
    ("value-without-algorithm", checkm(f"file:///a | | {MD5_A}"), 4, "has no hashAlgorithm"),
    ("unknown-algorithm", checkm(f"file:///a | crc32 | {MD5_A}"), 4, "'crc32' is not supported"),
    ("negative-size", checkm("file:///a | | | -1"), 4, "fileSize '-1' is not a non-negative integer"),
    ("non-numeric-size", checkm("file:///a | | | 12kB"), 4, "fileSize '12kB' is not"),
    ("huge-size", checkm("file:///a | | | " + "9" * 5000), 4, "is not a non-negative integer"),
    ("parent-name", checkm("file:///a | | | | ../x"), 4, r"fileName '../x' is not a safe relative path \(a '..' segment\)"),
    ("absolute-name", checkm("file:///a | | | | /etc/passwd"), 4, r"'/etc/passwd' is not a safe relative path \(absolute\)"),
    ("inner-parent-name", checkm("file:///a | | | | a/../../x"), 4, "a '..' segment"),
    ("dot-name", checkm("file:///a | | | | ./x"), 4, "a '.' segment"),
    ("empty-segment", checkm("file:///a | | | | a//b"), 4, "an empty segment"),
    ("backslash-name", checkm("file:///a | | | | ..\\x"), 4, "backslash, control character"),
    ("line-separator-name", checkm("file:///a | | | | a\u2028b"), 4, "line separator"),
    ("c1-control-name", checkm("file:///data/a%C2%85b"), 4, "control character"),
    ("encoded-parent", checkm("file:///data/%2e%2e"), 4, "fileName '..' is not a safe relative path"),
    ("encoded-nul", checkm("file:///data/a%00b"), 4, "backslash, control character"),
    ("encoded-slash", checkm("file:///data/%2Fetc%2Fpasswd"), 4, "absolute"),
    ("url-names-no-file", checkm("https://example.org/dir/"), 4, "names no file: give its nfo:fileName"),
    ("host-only-url", checkm("https://example.org"), 4, "names no file"),
    ("undecodable-name", checkm("file:///data/%ff"), 4, "not UTF-8"),
    ("relative-without-base", checkm("a.txt"), 4, "relative fileUrl 'a.txt' but no manifest URL"),
    ("conflicting-primary-ids", checkm("file:///a | | | | | ark:/1", "file:///b | | | | | ark:/2"), 5,
     "primaryIdentifier 'ark:/2' differs from 'ark:/1' on line 4"),
    ("conflicting-local-ids", checkm("file:///a | | | | | | x", "file:///b", "file:///c | | | | | | x; y"), 6,
     "localIdentifier 'x; y' differs from 'x' on line 4"),
    ("repeated-name", checkm("file:///a/x", "file:///b/x"), 5, "fileName 'x' repeats line 4"),
    ("file-inside-file", checkm("file:///a | | | | x", "file:///b | | | | x/y/z"), 5, "'x/y/z' is inside 'x', a file on line 4"),
    ("unknown-profile", checkm("file:///a", profile="http://x/mrt-single-file-batch-manifest"), 2,
     "profile 'http://x/mrt-single-file-batch-manifest' is not one of"),
    ("second-profile", checkm("#%profile | mrt-ingest-manifest", "file:///a"), 4, "a second '#%profile'"),
    ("no-kind", checkm("file:///a", profile=None), None, "no '#%profile' header and no manifest kind given"),
]


@pytest.mark.parametrize(("text", "line", "message"), [case[1:] for case in REFUSALS], ids=[case[0] for case in REFUSALS])
def test_corrupt_manifests_are_refused_naming_the_line(text: str, line: int | None, message: str) -> None:
    """Each problem is a ManifestError (a ValueError) with its line and a one-line message."""
    error = refused(text)
    assert isinstance(error, ValueError)
    assert error.line == line
    assert "\n" not in str(error)
    assert str(error).startswith(f"line {line}: " if line is not None else error.reason)
    assert re.search(message, str(error)), str(error)


def test_a_profile_naming_another_kind_than_the_callers_is_refused() -> None:
    """The caller expects an object manifest; `#%profile` says container batch: refused at the profile line."""
    text = checkm("file:///a.zip", profile="http://uc3.cdlib.org/registry/ingest/manifest/mrt-container-batch-manifest")
    error = refused(text, kind=OBJECT_MANIFEST)
    assert error.line == 2
    assert "makes this a container-manifest, but a object-manifest is expected" in str(error)


def test_an_unknown_kind_is_refused() -> None:
    """Only the three manifest kinds exist."""
    assert "unknown manifest kind 'single-file'" in str(refused(checkm("file:///a"), kind="single-file"))


def test_bytes_that_are_not_utf8_are_refused_with_their_line() -> None:
    """Latin-1 bytes are not UTF-8: refused, naming the line and the byte."""
    data = checkm("file:///a", "file:///caf\xe9").encode("latin-1")
    error = refused(data)
    assert error.line == 5 and "not UTF-8 (0xe9)" in str(error)


def test_nul_characters_are_refused_with_their_line() -> None:
    """A NUL anywhere (here inside a comment) is refused, for bytes and text alike."""
    text = checkm("file:///a", "# nul \x00 here")
    for data in (text, text.encode()):
        error = refused(data)
        assert error.line == 5 and "NUL" in str(error)


def test_a_lone_surrogate_in_text_is_refused() -> None:
    """Text that cannot be UTF-8 (a lone surrogate) is refused rather than crashing later."""
    assert refused(checkm("file:///a\ud800")).line == 4


def test_manifests_over_the_byte_limit_are_refused_before_parsing() -> None:
    """`max_bytes` counts UTF-8 bytes, for bytes and for text (é is two bytes)."""
    text = checkm("file:///é")
    size = len(text.encode())
    assert parse_manifest(text, max_bytes=size).objects
    assert parse_manifest(text.encode(), max_bytes=size).objects
    for data in (text, text.encode()):
        error = refused(data, max_bytes=size - 1)
        assert error.line is None and f"more than {size - 1}" in str(error)
    assert "larger than 10 bytes" in str(refused(text, max_bytes=10))


def test_manifests_over_the_row_limit_are_refused_at_the_first_row_too_many() -> None:
    """`max_rows` data rows are fine; one more is refused, naming its line."""
    text = checkm("file:///a", "file:///b", "# c", "file:///c")
    assert len(parse_manifest(text, max_rows=3).objects[0].files) == 3
    error = refused(text, max_rows=2)
    assert error.line == 7 and "more than 2 data rows" in str(error)


# URLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "reference", "resolved"),
    [
        ("file:///data/m.checkm", "a.txt", "file:///data/a.txt"),
        ("file:///data/m.checkm", "sub/b.txt", "file:///data/sub/b.txt"),
        ("file:///data/in/m.checkm", "../c.txt", "file:///data/c.txt"),
        ("file:///data/m.checkm", "../../../x", "file:///x"),
        ("file:///data/m.checkm", "/other/d.txt", "file:///other/d.txt"),
        ("file:///data/m.checkm", "./e%20f.txt", "file:///data/e%20f.txt"),
        ("/data/m.checkm", "a.txt", "file:///data/a.txt"),
        ("memory:///defs/m.checkm", "a.txt", "memory:///defs/a.txt"),
        ("memory://defs/m.checkm", "a.txt", "memory://defs/a.txt"),
        ("memory://defs/sub/m.checkm", "../a.txt", "memory://defs/a.txt"),
        ("memory://m.checkm", "a.txt", "memory://a.txt"),
        ("memory://defs/m.checkm", "/top/a.txt", "memory://top/a.txt"),
        ("s3://bucket/batch/m.checkm", "obj/a.txt", "s3://bucket/batch/obj/a.txt"),
        ("https://example.org/m/list?x=1", "a.txt?y=2#f", "https://example.org/m/a.txt?y=2#f"),
        ("https://example.org/m/list", "//cdn.example.org/a.txt", "https://cdn.example.org/a.txt"),
        ("file:///data/m.checkm", "https://example.org/a/../b.txt", "https://example.org/b.txt"),
        ("memory://defs/m.checkm", "file:///abs.txt", "file:///abs.txt"),
    ],
    ids=[
        "file-sibling", "file-child", "file-parent", "file-above-root", "file-absolute-path", "file-dot",
        "bare-path-base", "memory-triple-slash", "memory-fsspec-style", "memory-parent", "memory-top-level",
        "memory-absolute-path", "s3", "https-query-fragment", "network-path", "absolute-url-dots", "absolute-url",
    ],
)
def test_relative_urls_resolve_against_the_manifests_url(base: str, reference: str, resolved: str) -> None:
    """RFC 3986 resolution for every scheme (urljoin knows neither memory:// nor s3://); memory://dir/ is a directory."""
    assert resolve_url(reference, base) == resolved
    manifest = parse_manifest(checkm(f"{reference} | | | | x"), base_url=base)
    assert manifest.objects[0].files[0].url == resolved


def test_a_relative_url_names_its_file_after_resolution() -> None:
    """The default fileName is the resolved URL's last segment (memory://name has no host)."""
    manifest = parse_manifest(checkm("a.txt"), base_url="memory://m.checkm")
    assert manifest.objects[0].files[0] == FileSpec("memory://a.txt", "a.txt")


def test_a_base_url_must_be_absolute() -> None:
    """A base URL without a scheme (and not an absolute path) cannot resolve anything."""
    assert "is not absolute" in str(refused(checkm("file:///a"), base_url="relative/m.checkm"))
    with pytest.raises(ManifestError, match="no manifest URL"):
        resolve_url("a.txt")


# Writing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "files",
    [
        [FileSpec("file:///a|b", "a")],
        [FileSpec("file:///a", "a|b")],
        [FileSpec("file:///a", "a\nb")],
        [FileSpec("file:///a", "../a")],
        [FileSpec("#file", "a")],
        [FileSpec("", "a")],
        [FileSpec("file:///a", "a", -1)],
        [FileSpec("file:///a", "a", mime_type=" text/plain")],
        [FileSpec("file:///a\x00", "a")],
        [],
    ],
    ids=["pipe-in-url", "pipe-in-name", "newline", "unsafe-name", "comment-url", "empty-url", "negative-size",
         "surrounding-space", "nul", "no-files"],
)
def test_the_writer_refuses_values_the_format_cannot_carry(files: list[FileSpec]) -> None:
    """What would not parse back the same is refused when writing, not silently changed."""
    with pytest.raises(ManifestError, match="cannot write|at least one row"):
        write_object_manifest(files)


def test_the_writer_refuses_shapes_its_kind_cannot_hold() -> None:
    """An object manifest holds one object; a container row exactly one file; ids never contain ';'."""
    one = ObjectSpec(files=(FileSpec("file:///a", "a"),))
    with pytest.raises(ManifestError, match="one object, not 2"):
        write_manifest(OBJECT_MANIFEST, [one, one])
    with pytest.raises(ManifestError, match="one container, not 0 files"):
        write_container_manifest([ObjectSpec(("x",))])
    with pytest.raises(ManifestError, match="localIdentifier 'a;b'"):
        write_batch_manifest([ObjectSpec(("a;b",), manifest_url="file:///m")])
    with pytest.raises(ManifestError, match="unknown manifest kind"):
        write_manifest("zip", [one])


# Fuzzing and size ------------------------------------------------------------------------

LINE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "#%eof", "#%fields | nfo:fileUrl | nfo:hashAlgorithm | nfo:hashValue | nfo:fileSize | nfo:fileName",
                     "#%profile | mrt-batch-manifest", "#%profile | mrt-ingest-manifest", "# c", "#%prefix | a: | b"]),
    st.lists(
        st.sampled_from(["", "file:///a", "a", "../b", "memory://x/y/", "md5", "SHA-256", MD5_A, "-1", "7", "x/y", "%2e"]),
        max_size=7,
    ).map(" | ".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(LINE, max_size=8),
    kind=st.sampled_from([None, *MANIFEST_KINDS]),
    base=st.sampled_from(["", "file:///d/m", "memory://d/m", "https://h"]),
)
def test_any_manifest_like_text_parses_or_is_a_manifest_error(lines: list[str], kind: str | None, base: str) -> None:
    """Headers, rows and junk in any order: a Manifest or a ManifestError, never another exception."""
    text = "\n".join(["#%checkm_0.7", *lines, "#%eof"])
    try:
        manifest = parse_manifest(text, kind=kind, base_url=base)
    except ManifestError as error:
        assert "\n" not in str(error)
    else:
        assert manifest.kind in MANIFEST_KINDS and manifest.objects


@settings(max_examples=200, deadline=None)
@given(data=st.one_of(st.text(), st.binary()))
def test_any_text_or_bytes_parse_or_raise_a_manifest_error(data: str | bytes) -> None:
    """Arbitrary input never raises anything but ManifestError."""
    try:
        parse_manifest(data, base_url="file:///d/m")
    except ManifestError:
        pass


def test_a_10000_row_manifest_parses() -> None:
    """Ten thousand rows with digests and sizes (the benchmark's shape) parse to ten thousand files."""
    files = [
        FileSpec(f"file:///data/{index // 100}/{index}.bin", f"{index // 100}/{index}.bin", index, Digest("md5", MD5_A))
        for index in range(10_000)
    ]
    text = write_object_manifest(files, local_ids="big")
    started = time.perf_counter()
    manifest = parse_manifest(text)
    elapsed = time.perf_counter() - started
    assert manifest.objects[0].files == tuple(files)
    print(f"10,000 rows: {elapsed:.3f} s")  # no assertion: shared CI machines vary
