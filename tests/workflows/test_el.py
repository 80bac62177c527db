"""The workflow EL (spec 4.2): basic functions, wf: functions over the job's state, fs: functions on real files."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fsspec
import pytest

from oozie.definitions import parse_hadoop_configuration, parse_properties
from oozie.el import ELError, ELEvaluationError, ELUnresolvedVariable, evaluate
from workflows.el import (
    FUNCTION_NAMES,
    NodeState,
    WorkflowState,
    evaluate_predicate,
    evaluate_text,
    resolve_spec,
    workflow_context,
)

STATE = WorkflowState(
    id="0000001-260101000000000-oozie-W",
    name="daily-wf",
    app_path="file:///apps/daily",
    conf={"inputDir": "/data/in", "n": "3", "KB": "overridden?"},
    user="ann",
    group="analysts",
    run=2,
    callback_base="http://scheduler.example/oozie/callback",
    last_error_node="load",
    nodes={
        "load": NodeState(transition="fail", error_code="FS006", error_message="move, source path [x] does not exist",
                          external_id="ext-1", external_status="ERROR"),
        "count": NodeState(transition="decide", data={"rows": "42", "my.prop": "a b", "status": "ok"},
                           external_id="4711", external_status="SUCCEEDED"),
    },
    current_node="notify",
)


def value(template: str, state: WorkflowState = STATE) -> Any:
    """The raw value of a lone expression (not coerced to text)."""
    return evaluate(template, workflow_context(state))


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        pytest.param("${wf:id()}", STATE.id, id="id"),
        pytest.param("${wf:name()}", "daily-wf", id="name"),
        pytest.param("${wf:appPath()}", "file:///apps/daily", id="app-path"),
        pytest.param("${wf:conf('inputDir')}", "/data/in", id="conf"),
        pytest.param("${wf:conf('nope')}", None, id="conf-undefined-is-null"),
        pytest.param("${wf:user()}", "ann", id="user"),
        pytest.param("${wf:group()}", "analysts", id="group"),
        pytest.param("${wf:run()}", 2, id="run-is-a-number"),
        pytest.param("${wf:transition('load')}", "fail", id="transition"),
        pytest.param("${wf:transition('never-ran')}", None, id="transition-of-unrun-node-is-null"),
        pytest.param("${wf:lastErrorNode()}", "load", id="last-error-node"),
        pytest.param("${wf:errorCode('load')}", "FS006", id="error-code"),
        pytest.param("${wf:errorMessage('load')}", "move, source path [x] does not exist", id="error-message"),
        pytest.param("${wf:errorCode('count')}", None, id="error-code-of-ok-node-is-null"),
        pytest.param("${wf:actionExternalId('count')}", "4711", id="external-id"),
        pytest.param("${wf:actionExternalStatus('count')}", "SUCCEEDED", id="external-status"),
        pytest.param("${wf:actionTrackerUri('count')}", None, id="tracker-uri-is-null"),
        pytest.param("${wf:actionData('count')['rows']}", "42", id="action-data-by-key"),
        pytest.param("${wf:actionData('count')['my.prop']}", "a b", id="action-data-dotted-key"),
        pytest.param("${wf:actionData('count').rows}", "42", id="action-data-dot-access"),
        pytest.param("${wf:actionData('count')['rows'] > 40}", True, id="action-data-as-number"),
        pytest.param("${wf:actionData('never-ran')}", {}, id="action-data-of-unrun-node-is-empty"),
        pytest.param("${empty wf:actionData('never-ran')['x']}", True, id="missing-key-is-empty"),
        pytest.param(
            "${wf:callback('OK')}",
            "http://scheduler.example/oozie/callback?id=0000001-260101000000000-oozie-W@notify&status=OK",
            id="callback-url-names-the-current-node",
        ),
        pytest.param("${inputDir}/x", "/data/in/x", id="conf-as-variables"),
        pytest.param("${n * MB}", 3 * 1024 * 1024, id="byte-constant"),
        pytest.param("${PB / TB}", 1024.0, id="peta-is-1024-tera"),
        pytest.param("${KB}", "overridden?", id="configuration-wins-over-constants"),
    ],
)
def test_workflow_functions(template: str, expected: Any) -> None:
    """Each wf: function reads the job's state; what Oozie leaves null is null (prints as '')."""
    assert value(template) == expected


def test_null_values_print_as_empty_text() -> None:
    """Null in text is '' (spec 4.2.3: 'or an empty string if undefined')."""
    assert evaluate_text("[${wf:conf('nope')}][${wf:errorCode('count')}]", STATE) == "[][]"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        pytest.param("${firstNotNull(wf:conf('nope'), 'fallback')}", "fallback", id="first-not-null-skips-null"),
        pytest.param("${firstNotNull('a', 'b')}", "a", id="first-not-null-first"),
        pytest.param("${firstNotNull(wf:conf('x'), wf:conf('y'))}", None, id="first-not-null-both-null"),
        pytest.param("${concat('a', 'b')}", "ab", id="concat"),
        pytest.param("${concat(wf:conf('nope'), 'b')}", "b", id="concat-null-is-empty"),
        pytest.param("${replaceAll('2026-01-02', '-', '/')}", "2026/01/02", id="replace-all"),
        pytest.param("${replaceAll('a1b22', '([0-9]+)', '<$1>')}", "a<1>b<22>", id="replace-all-java-group"),
        pytest.param("${replaceAll('a.b', '\\\\.', '\\\\$')}", "a$b", id="replace-all-escaped-dollar"),
        pytest.param("${replaceAll('abc', null, 'x')}", "abc", id="replace-all-null-regex-no-change"),
        pytest.param("${replaceAll('abc', 'b', null)}", "ac", id="replace-all-null-replacement-empty"),
        pytest.param("${appendAll('/a/b/,/c/b/,/c/d/', 'ADD', ',')}", "/a/b/ADD,/c/b/ADD,/c/d/ADD", id="append-all-spec"),
        pytest.param("${appendAll('a,b,,', 'X', ',')}", "aX,bX", id="append-all-drops-trailing-empties"),
        pytest.param("${appendAll(',a', 'X', ',')}", "X,aX", id="append-all-leading-empty"),
        pytest.param("${appendAll('a,b', null, ',')}", "a,b", id="append-all-null-append"),
        pytest.param("${appendAll('a,b', 'X', null)}", "a,b", id="append-all-null-delimiter"),
        pytest.param("${trim('  a b \t')}", "a b", id="trim"),
        pytest.param("${trim(wf:conf('nope'))}", "", id="trim-null"),
        pytest.param("${urlEncode('a b&c=d/é~*')}", "a+b%26c%3Dd%2F%C3%A9%7E*", id="url-encode-as-java"),
        pytest.param("${urlEncode(wf:conf('nope'))}", "", id="url-encode-null"),
    ],
)
def test_basic_functions(template: str, expected: Any) -> None:
    """Spec 4.2.2 functions, with Java's null and regular-expression conventions."""
    assert value(template) == expected


def test_timestamp_is_now_in_oozie_format() -> None:
    """timestamp() is the current minute, yyyy-MM-ddTHH:mmZ (processing time zone UTC)."""
    before = datetime.now(UTC).replace(second=0, microsecond=0)
    text = evaluate_text("${timestamp()}", STATE)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ", text), text
    stamp = datetime.strptime(text, "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC)
    assert 0 <= (stamp - before).total_seconds() <= 120


def test_map_encoders_round_trip_action_data() -> None:
    """toJsonStr, toPropertiesStr and toConfigurationStr carry a node's whole action data as one string."""
    data = dict(STATE.nodes["count"].data)
    assert json.loads(evaluate_text("${toJsonStr(wf:actionData('count'))}", STATE)) == data
    assert parse_properties(evaluate_text("${toPropertiesStr(wf:actionData('count'))}", STATE)) == data
    assert parse_hadoop_configuration(evaluate_text("${toConfigurationStr(wf:actionData('count'))}", STATE)) == data


def test_properties_text_escapes_what_java_escapes() -> None:
    """Keys with separators, leading blanks, newlines and non-ASCII survive the properties round trip."""
    tricky = {"a key=1": " lead", "colon:x": "line1\nline2", "uni": "é😀", "hash#": "!bang"}
    state = WorkflowState(**{**STATE.__dict__, "nodes": {"x": NodeState(data=tricky)}})
    assert parse_properties(evaluate_text("${toPropertiesStr(wf:actionData('x'))}", state)) == tricky


@pytest.mark.parametrize(
    ("template", "message"),
    [
        pytest.param("${toJsonStr('text')}", "takes a map", id="encoder-needs-a-map"),
        pytest.param("${replaceAll('a', '(', 'b')}", "bad regular expression", id="bad-regex"),
        pytest.param("${replaceAll('a', 'a', '$x')}", "group reference", id="bad-group-reference"),
        pytest.param("${wf:conf()}", "takes 1 arguments", id="arity"),
    ],
)
def test_function_errors_are_el_errors(template: str, message: str) -> None:
    """Misuse is a typed EL error naming the problem, never a Python exception."""
    with pytest.raises(ELEvaluationError, match=re.escape(message)):
        evaluate_text(template, STATE)


def test_unknown_variable_is_refused() -> None:
    """A variable that is not in the configuration is an error (it was checked at submission)."""
    with pytest.raises(ELUnresolvedVariable):
        evaluate_text("${outputDir}", STATE)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        pytest.param("${wf:actionData('count')['status'] eq 'ok'}", True, id="comparison-true"),
        pytest.param("${wf:run() gt 5}", False, id="comparison-false"),
        pytest.param("true", True, id="literal-true"),
        pytest.param("  ${true}  ", True, id="trimmed"),
        pytest.param("TRUE", False, id="only-lowercase-true"),
        pytest.param("yes", False, id="anything-else-false"),
        pytest.param("${wf:conf('nope')}", False, id="null-false"),
    ],
)
def test_decision_predicates(template: str, expected: bool) -> None:
    """A case is taken when its text is exactly 'true' once trimmed (Oozie's DecisionActionExecutor)."""
    assert evaluate_predicate(template, STATE) is expected


def test_resolve_spec_evaluates_every_string() -> None:
    """Strings in nested lists and maps are evaluated (keys too); other values and escapes are kept."""
    spec = {
        "exec": "${wf:conf('inputDir')}/run.sh",
        "args": ["${wf:run()}", "plain", "\\${not evaluated}"],
        "capture_output": True,
        "configuration": {"${wf:name()}.key": "${wf:actionData('count')['rows']}"},
        "prepare": [{"op": "delete", "path": "file://${inputDir}/tmp"}],
        "retries": 3,
    }
    assert resolve_spec(spec, STATE) == {
        "exec": "/data/in/run.sh",
        "args": ["2", "plain", "${not evaluated}"],
        "capture_output": True,
        "configuration": {"daily-wf.key": "42"},
        "prepare": [{"op": "delete", "path": "file:///data/in/tmp"}],
        "retries": 3,
    }


def test_function_names_cover_the_spec() -> None:
    """Every function of spec 4.2.2, 4.2.3 and 4.2.7 is registered (the parser defers exactly these)."""
    expected = {
        "firstNotNull", "concat", "replaceAll", "appendAll", "trim", "urlEncode", "timestamp",
        "toJsonStr", "toPropertiesStr", "toConfigurationStr",
        *(f"wf:{name}" for name in (
            "id", "name", "appPath", "conf", "user", "group", "callback", "transition", "lastErrorNode",
            "errorCode", "errorMessage", "run", "actionData", "actionExternalId", "actionExternalStatus",
            "actionTrackerUri",
        )),
        *(f"fs:{name}" for name in ("exists", "isDir", "dirSize", "fileSize", "blockSize")),
    }
    assert expected == FUNCTION_NAMES


# --- fs: functions on real files ------------------------------------------------------------------

@pytest.fixture
def files(tmp_path: Path, settings: Any) -> Path:
    """A directory under the workflow roots: two files (3 and 5 bytes), a subdirectory with one more file."""
    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"abc")
    (root / "b.txt").write_bytes(b"hello")
    (root / "sub" / "c.txt").write_bytes(b"1234567")
    settings.WORKFLOW_FS_ROOTS = [f"file://{root}"]
    return root


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        pytest.param("${fs:exists('file://ROOT/a.txt')}", True, id="exists-file"),
        pytest.param("${fs:exists('file://ROOT/sub')}", True, id="exists-dir"),
        pytest.param("${fs:exists('file://ROOT/missing')}", False, id="exists-missing"),
        pytest.param("${fs:exists('file://ROOT/*.txt')}", True, id="exists-glob-matches"),
        pytest.param("${fs:exists('file://ROOT/*.csv')}", False, id="exists-glob-no-match"),
        pytest.param("${fs:isDir('file://ROOT/sub')}", True, id="is-dir"),
        pytest.param("${fs:isDir('file://ROOT/a.txt')}", False, id="is-dir-file"),
        pytest.param("${fs:isDir('file://ROOT/missing')}", False, id="is-dir-missing"),
        pytest.param("${fs:fileSize('file://ROOT/b.txt')}", 5, id="file-size"),
        pytest.param("${fs:fileSize('file://ROOT/sub')}", -1, id="file-size-dir"),
        pytest.param("${fs:fileSize('file://ROOT/missing')}", -1, id="file-size-missing"),
        pytest.param("${fs:dirSize('file://ROOT')}", 8, id="dir-size-not-recursive"),
        pytest.param("${fs:dirSize('file://ROOT/a.txt')}", -1, id="dir-size-file"),
        pytest.param("${fs:dirSize('file://ROOT/missing')}", -1, id="dir-size-missing"),
        pytest.param("${fs:blockSize('file://ROOT/missing')}", -1, id="block-size-missing"),
        pytest.param("${fs:blockSize('file://ROOT/sub')}", -1, id="block-size-dir"),
    ],
)
def test_fs_functions(files: Path, template: str, expected: Any) -> None:
    """fs: functions answer from storage; -1 for what is not a file (or not a directory) or is missing."""
    assert value(template.replace("ROOT", str(files))) == expected


def test_fs_block_size_of_a_local_file(files: Path) -> None:
    """A local file's block size is what the operating system reports for it."""
    assert value(f"${{fs:blockSize('file://{files}/a.txt')}}") == os.stat(files / "a.txt").st_blksize


def test_fs_functions_in_a_decision(files: Path) -> None:
    """A decision on fs:exists and fs:fileSize sees files appear."""
    case = f"${{fs:exists('file://{files}/new') and fs:fileSize('file://{files}/new') gt 0}}"
    assert evaluate_predicate(case, STATE) is False
    (files / "new").write_text("x")
    assert evaluate_predicate(case, STATE) is True


@pytest.mark.parametrize(
    ("path", "message"),
    [
        pytest.param("/etc/passwd", "Missing scheme", id="no-scheme"),
        pytest.param("file:///etc/passwd", "outside the workflow file system roots", id="outside-roots"),
        pytest.param("file://ROOT/../../etc", "outside the workflow file system roots", id="dot-dot-escape"),
        pytest.param("http://example.com/x", "outside the workflow file system roots", id="other-protocol"),
        pytest.param("simplecache::file://ROOT/a.txt", "Chained", id="chained"),
    ],
)
def test_fs_functions_stay_under_the_roots(files: Path, path: str, message: str) -> None:
    """fs: paths need a file system and must lie under WORKFLOW_FS_ROOTS: refused, storage untouched."""
    with pytest.raises(ELError, match=re.escape(message)):
        evaluate_text(f"${{fs:exists('{path.replace('ROOT', str(files))}')}}", STATE)


def test_fs_symlink_out_of_the_roots_is_refused(files: Path, tmp_path: Path) -> None:
    """A symbolic link under a root that points outside is judged by its target."""
    outside = tmp_path / "secret"
    outside.write_text("s")
    (files / "link").symlink_to(outside)
    with pytest.raises(ELError, match="outside"):
        evaluate_text(f"${{fs:fileSize('file://{files}/link')}}", STATE)


def test_fs_functions_on_memory_storage(settings: Any) -> None:
    """Any fsspec file system under the roots works: memory:// here."""
    settings.WORKFLOW_FS_ROOTS = ["memory://"]
    fs = fsspec.filesystem("memory")
    fs.pipe("/wf-el-test/part-0", b"12345")
    try:
        assert value("${fs:fileSize('memory:///wf-el-test/part-0')}") == 5
        assert value("${fs:dirSize('memory:///wf-el-test')}") == 5
        assert value("${fs:isDir('memory:///wf-el-test')}") is True
    finally:
        fs.rm("/wf-el-test", recursive=True)
