"""EL map and list access (JSP EL 1.8): value[key] and value.name on what functions return."""

from __future__ import annotations

from typing import Any

import pytest

from oozie.el import (
    ELContext,
    ELEvaluationError,
    ELFunction,
    ELLimitError,
    ELSyntaxError,
    FunctionRegistry,
    evaluate,
    parse_expression,
)

DATA = {"k": "v", "my.prop": "2", "inner": {"x": "y"}}
CTX = ELContext(
    variables={"m": DATA, "items": ["p", "q"], "n": None, "s": "text", "key": "k"},
    functions=FunctionRegistry().with_functions(ELFunction("t:data", lambda ctx: DATA)),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("${m['k']}", "v", id="string-key"),
        pytest.param("${m['my.prop']}", "2", id="dotted-key-in-brackets"),
        pytest.param("${m[key]}", "v", id="key-from-a-variable"),
        pytest.param("${m['missing']}", None, id="missing-key-is-null"),
        pytest.param("${empty m['missing']}", True, id="empty-of-missing"),
        pytest.param("${m['inner']['x']}", "y", id="nested"),
        pytest.param("${t:data().k}", "v", id="dot-after-call"),
        pytest.param("${t:data().inner.x}", "y", id="dots-chain-after-call"),
        pytest.param("${t:data()['k'] == 'v'}", True, id="in-comparison"),
        pytest.param("${items[1]}", "q", id="list-index"),
        pytest.param("${items['0']}", "p", id="list-index-numeric-string"),
        pytest.param("${items[7]}", None, id="list-out-of-range-is-null"),
        pytest.param("${n['k']}", None, id="null-target-is-null"),
        pytest.param("a-${m['k']}-b", "a-v-b", id="in-text"),
    ],
)
def test_index_access(text: str, expected: Any) -> None:
    """Map entries by key, list items by number; what is missing is null, as in JSP EL."""
    assert evaluate(text, CTX) == expected


def test_index_prints_back_to_source() -> None:
    """An index node prints as target[key], so deferred expressions keep their meaning."""
    assert parse_expression("t:data()['k']").to_source() == "t:data()['k']"
    assert parse_expression("t:data().a.b").to_source() == "t:data()['a']['b']"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param("${m[}", ELSyntaxError, id="unclosed-bracket"),
        pytest.param("${t:data().}", ELSyntaxError, id="dot-without-name"),
        pytest.param("${t:data().1}", ELSyntaxError, id="dot-with-number"),
        pytest.param("${s['k']}", ELEvaluationError, id="string-is-not-a-map"),
        pytest.param("${items['x']}", ELEvaluationError, id="list-index-not-a-number"),
        pytest.param("${m" + "['k']" * 150 + "}", ELLimitError, id="chain-deeper-than-limit"),
    ],
)
def test_index_errors(text: str, error: type[Exception]) -> None:
    """Malformed or meaningless accesses are typed errors, never Python exceptions."""
    with pytest.raises(error):
        evaluate(text, CTX)
