"""Recursive-descent parser for EL expressions, with a nesting limit checked before recursing."""

from __future__ import annotations

from oozie.el.errors import ELLimitError, ELSyntaxError
from oozie.el.lexer import Token, tokenize
from oozie.el.nodes import Binary, Call, Index, Literal, Node, Ternary, Unary, Variable

MAX_DEPTH = 100
MAX_ARGS = 50


class _Parser:
    def __init__(self, expression: str, max_depth: int) -> None:
        self.expression = expression
        self.tokens = tokenize(expression)
        self.index = 0
        self.depth = 0
        self.max_depth = max_depth

    # --- helpers ---------------------------------------------------------------------------
    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.index + offset, len(self.tokens) - 1)]

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at(self, *ops: str) -> bool:
        token = self.peek()
        return token.kind == "OP" and token.value in ops

    def expect(self, op: str) -> Token:
        if not self.at(op):
            token = self.peek()
            found = repr(token.value) if token.kind != "END" else "the end"
            raise ELSyntaxError(f"expected {op!r} but found {found}", self.expression, token.position)
        return self.take()

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise ELLimitError(f"expression nested deeper than {self.max_depth}", self.expression[:200], self.peek().position)

    # --- grammar ---------------------------------------------------------------------------
    def parse(self) -> Node:
        if self.peek().kind == "END":
            raise ELSyntaxError("empty expression", self.expression, 0)
        node = self.ternary()
        if self.peek().kind != "END":
            token = self.peek()
            raise ELSyntaxError(f"unexpected {token.value!r}", self.expression, token.position)
        return node

    def ternary(self) -> Node:
        self.enter()
        try:
            condition = self.binary(1)
            if self.at("?"):
                self.take()
                then = self.ternary()
                self.expect(":")
                otherwise = self.ternary()
                return Ternary(condition, then, otherwise)
            return condition
        finally:
            self.depth -= 1

    PRECEDENCE: dict[str, int] = {
        "||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4,
        "+": 5, "-": 5, "*": 6, "/": 6, "%": 6,
    }

    def binary(self, min_precedence: int) -> Node:
        # Precedence climbing: left-associative, recursion bounded by the 6 levels.
        node = self.unary()
        while True:
            token = self.peek()
            precedence = self.PRECEDENCE.get(token.value, 0) if token.kind == "OP" else 0
            if precedence < min_precedence or precedence == 0:
                return node
            op = self.take().value
            node = Binary(op, node, self.binary(precedence + 1))

    def unary(self) -> Node:
        if self.at("-", "!", "empty"):
            op = self.take().value
            self.enter()
            try:
                return Unary(op, self.unary())
            finally:
                self.depth -= 1
        return self.postfix(self.primary())

    def postfix(self, node: Node) -> Node:
        # JSP EL's value[key] and value.name (spec 4.2.3: wf:actionData('node')['key']); each
        # access nests the tree one level, so a chain counts against the depth limit.
        accesses = 0
        while self.at("[", "."):
            accesses += 1
            if self.depth + accesses > self.max_depth:
                raise ELLimitError(f"expression nested deeper than {self.max_depth}", self.expression[:200], self.peek().position)
            if self.take().value == "[":
                node = Index(node, self.ternary())
                self.expect("]")
                continue
            token = self.peek()
            if token.kind != "IDENT":
                found = repr(token.value) if token.kind != "END" else "the end"
                raise ELSyntaxError(f"expected a name after '.' but found {found}", self.expression, token.position)
            self.take()
            for name in token.value.split("."):  # the lexer reads a.b as one name; EL means .a then .b
                if not name:
                    raise ELSyntaxError("empty name after '.'", self.expression, token.position)
                node = Index(node, Literal(name))
        return node

    def primary(self) -> Node:
        token = self.peek()
        if token.kind == "NUMBER":
            self.take()
            text = token.value
            if any(c in text for c in ".eE"):
                return Literal(float(text))
            if len(text) > 19:
                raise ELSyntaxError("number too large", self.expression, token.position)
            return Literal(int(text))
        if token.kind == "STRING":
            self.take()
            return Literal(token.value)
        if token.kind == "OP" and token.value in ("true", "false", "null"):
            self.take()
            return Literal({"true": True, "false": False, "null": None}[token.value])
        if token.kind == "OP" and token.value == "(":
            self.take()
            node = self.ternary()
            self.expect(")")
            return node
        if token.kind == "IDENT":
            self.take()
            following, name_token, paren = self.peek(), self.peek(1), self.peek(2)
            if (
                following.kind == "OP" and following.value == ":" and name_token.kind == "IDENT"
                and paren.kind == "OP" and paren.value == "("
            ):
                self.take()
                self.take()
                return self.call(f"{token.value}:{name_token.value}", token.position)
            if following.kind == "OP" and following.value == "(":
                return self.call(token.value, token.position)
            return Variable(token.value)
        found = repr(token.value) if token.kind != "END" else "the end"
        raise ELSyntaxError(f"unexpected {found}", self.expression, token.position)

    def call(self, name: str, position: int) -> Node:
        self.expect("(")
        args: list[Node] = []
        if not self.at(")"):
            while True:
                args.append(self.ternary())
                if len(args) > MAX_ARGS:
                    raise ELLimitError(f"more than {MAX_ARGS} arguments", self.expression[:200], position)
                if not self.at(","):
                    break
                self.take()
        self.expect(")")
        return Call(name, tuple(args), position)


def parse_expression(expression: str, *, max_depth: int = MAX_DEPTH) -> Node:
    """Parse the text inside ${...} into a syntax tree."""
    try:
        return _Parser(expression, max_depth).parse()
    except RecursionError:  # a backstop: the depth limit should always trigger first
        raise ELLimitError("expression nested too deeply", expression[:200]) from None
