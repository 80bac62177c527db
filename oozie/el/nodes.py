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


@dataclass(frozen=True, slots=True)
class Index:
    """target[key] (and target.key): an entry of a map or list a function returned (wf:actionData)."""

    target: Node
    key: Node

    def to_source(self) -> str:
        """Source of the access."""
        return f"{self.target.to_source()}[{self.key.to_source()}]"


Node = Literal | Variable | Unary | Binary | Ternary | Call | Index


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of a node."""
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Ternary):
        return (node.condition, node.then, node.otherwise)
    if isinstance(node, Index):
        return (node.target, node.key)
    return ()


def walk(node: Node) -> list[Node]:
    """Every node of the tree, depth first (iterative: trees may be deep)."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(reversed(children(current)))
    return found


def calls_in(node: Node) -> list[str]:
    """Names of every function called in the tree."""
    return [n.name for n in walk(node) if isinstance(n, Call)]


def variables_in(node: Node) -> list[str]:
    """Names of every variable read in the tree."""
    return [n.name for n in walk(node) if isinstance(n, Variable)]
