"""Tokens of JSP expression language (the subset Oozie uses), with their positions."""

from __future__ import annotations

from dataclasses import dataclass

from oozie.el.errors import ELLimitError, ELSyntaxError

MAX_EXPRESSION = 10_000

KEYWORDS = {
    "div": "/", "mod": "%", "eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">=",
    "and": "&&", "or": "||", "not": "!", "empty": "empty", "true": "true", "false": "false", "null": "null",
}
SYMBOLS = (
    "==", "!=", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "!", "?", ":", "(", ")", ",",
    "[", "]", ".",  # map and list access on a function's value: wf:actionData('n')['key'], wf:actionData('n').key
)


@dataclass(frozen=True, slots=True)
class Token:
    """One token: kind (NUMBER, STRING, IDENT, OP, END), value, and where it starts."""

    kind: str
    value: str
    position: int


def tokenize(expression: str) -> list[Token]:
    """Split an expression (the text inside ${...}) into tokens, or raise ELSyntaxError."""
    if len(expression) > MAX_EXPRESSION:
        raise ELLimitError(f"expression longer than {MAX_EXPRESSION} characters", expression[:80] + "...")
    tokens: list[Token] = []
    i, n = 0, len(expression)
    while i < n:
        ch = expression[i]
        if ch.isspace():
            i += 1
            continue
        if ch.isdigit() or (ch == "." and i + 1 < n and expression[i + 1].isdigit()):
            start = i
            while i < n and expression[i].isdigit():
                i += 1
            if i < n and expression[i] == "." and i + 1 < n and expression[i + 1].isdigit():
                i += 1
                while i < n and expression[i].isdigit():
                    i += 1
            if i < n and expression[i] in "eE":
                j = i + 1
                if j < n and expression[j] in "+-":
                    j += 1
                if j < n and expression[j].isdigit():
                    i = j
                    while i < n and expression[i].isdigit():
                        i += 1
            tokens.append(Token("NUMBER", expression[start:i], start))
            continue
        if ch in "'\"":
            start, quote, i = i, ch, i + 1
            chars: list[str] = []
            while i < n and expression[i] != quote:
                if expression[i] == "\\" and i + 1 < n and expression[i + 1] in (quote, "\\"):
                    i += 1
                chars.append(expression[i])
                i += 1
            if i >= n:
                raise ELSyntaxError("unterminated string", expression, start)
            tokens.append(Token("STRING", "".join(chars), start))
            i += 1
            continue
        if ch.isalpha() or ch == "_":
            start = i
            while i < n and (expression[i].isalnum() or expression[i] in "_."):
                i += 1
            word = expression[start:i]
            if word in KEYWORDS:
                tokens.append(Token("OP", KEYWORDS[word], start))
            else:
                tokens.append(Token("IDENT", word, start))
            continue
        for symbol in SYMBOLS:
            if expression.startswith(symbol, i):
                tokens.append(Token("OP", symbol, i))
                i += len(symbol)
                break
        else:
            raise ELSyntaxError(f"unexpected character {ch!r}", expression, i)
    tokens.append(Token("END", "", n))
    return tokens
