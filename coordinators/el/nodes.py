"""The EL syntax tree: frozen dataclasses, printable back to source."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Literal:
    """A number, string, boolean or null."""

    value: object

    def to_source(self) -> str:
        """EL source for this literal."""
        if self.value is None:
            return "null"
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        if isinstance(self.value, str):
            return "'" + self.value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class Variable:
    """A variable (job property); dotted names are one name."""

    name: str

    def to_source(self) -> str:
        """The name."""
        return self.name


@dataclass(frozen=True, slots=True)
class Unary:
    """-x, !x, empty x."""

    op: str
    operand: Node

    def to_source(self) -> str:
        """Parenthesised source."""
        return f"({'empty ' if self.op == 'empty' else self.op}{self.operand.to_source()})"


@dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic, comparison and logical operators."""

    op: str
    left: Node
    right: Node

    def to_source(self) -> str:
        """Parenthesised source."""
        return f"({self.left.to_source()} {self.op} {self.right.to_source()})"


@dataclass(frozen=True, slots=True)
class Ternary:
    """condition ? then : otherwise."""

    condition: Node
    then: Node
    otherwise: Node

    def to_source(self) -> str:
        """Parenthesised source."""
        return f"({self.condition.to_source()} ? {self.then.to_source()} : {self.otherwise.to_source()})"


@dataclass(frozen=True, slots=True)
class Call:
    """ns:name(args...)."""

    name: str
    args: tuple[Node, ...]
    position: int = field(default=0, compare=False)  # where it was written; not part of the meaning

    def to_source(self) -> str:
        """Source of the call."""
        return f"{self.name}({', '.join(arg.to_source() for arg in self.args)})"


Node = Literal | Variable | Unary | Binary | Ternary | Call


def calls_in(node: Node) -> list[str]:
    """Names of every function called in the tree."""
    if isinstance(node, Call):
        return [node.name, *(name for arg in node.args for name in calls_in(arg))]
    if isinstance(node, Unary):
        return calls_in(node.operand)
    if isinstance(node, Binary):
        return calls_in(node.left) + calls_in(node.right)
    if isinstance(node, Ternary):
        return calls_in(node.condition) + calls_in(node.then) + calls_in(node.otherwise)
    return []


def variables_in(node: Node) -> list[str]:
    """Names of every variable read in the tree."""
    if isinstance(node, Variable):
        return [node.name]
    if isinstance(node, Call):
        return [name for arg in node.args for name in variables_in(arg)]
    if isinstance(node, Unary):
        return variables_in(node.operand)
    if isinstance(node, Binary):
        return variables_in(node.left) + variables_in(node.right)
    if isinstance(node, Ternary):
        return variables_in(node.condition) + variables_in(node.then) + variables_in(node.otherwise)
    return []
