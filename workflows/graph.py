"""A workflow's DAG drawn for people: a layered layout computed here, written as SVG (admin, Oozie API) or DOT.

Layout (no Graphviz on the servers): nodes are put on layers by their longest path from the
start (so every edge points down), ordered within a layer by one downward barycenter sweep
(fewer crossings), and drawn as rounded boxes with the node's name and type, filled with the
colour of the node's status (the palette of kernel.display, so a FAILED node is
the red of a FAILED action). Edges: `ok` (and fork paths, decision cases) grey, `error`
dashed red; the transition a node took is drawn dark and thicker.

Every text that reaches the SVG or the DOT goes through an escape; the result is safe to
inline in a page.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from kernel.display import BLUE_GREY, INK, PAPER, QUIET_LINE, status_colour

START = ":start:"
BOX_WIDTH, BOX_HEIGHT = 156, 44
GAP_X, GAP_Y = 28, 46
MARGIN = 16
MAX_LABEL = 22
LANE_GAP, MAX_LANES = 10, 16
#: Node statuses in the coordinators' palette: OK is a success, ERROR a failure, a user retry an error still running.
NODE_PALETTE = {
    "OK": "SUCCEEDED", "ERROR": "FAILED", "USER_RETRY": "RUNNINGWITHERROR", "FAILED": "FAILED",
    "KILLED": "KILLED", "RUNNING": "RUNNING", "PREP": "PREP",
}
KIND_LABEL = {"start": "start", "end": "end", "kill": "kill", "decision": "decision", "fork": "fork", "join": "join"}
NOT_REACHED_FILL, NOT_REACHED_STROKE = PAPER, QUIET_LINE
OK_EDGE, ERROR_EDGE, TAKEN_EDGE = QUIET_LINE, status_colour("FAILED"), INK


@dataclass(frozen=True)
class Edge:
    """One transition of the definition: `kind` is ok, error, case or default."""

    source: str
    target: str
    kind: str
    label: str = ""


@dataclass(frozen=True)
class Box:
    """One node placed: its layer, its position (top-left) and what it shows."""

    name: str
    kind: str  # the control kind or the action type
    layer: int
    x: int
    y: int
    status: str  # "" when the node was not reached


@dataclass(frozen=True)
class Layout:
    """The placed nodes (by name), the edges between shown nodes, and the drawing's size."""

    boxes: Mapping[str, Box]
    edges: tuple[Edge, ...]
    width: int
    height: int


def node_colour(status: str) -> str:
    """The fill of a node of this status (nodes not reached are white)."""
    if not status:
        return NOT_REACHED_FILL
    return status_colour(NODE_PALETTE.get(status, status))


def _edges(nodes: Mapping[str, Mapping[str, Any]]) -> list[Edge]:
    edges: list[Edge] = []
    for name, node in nodes.items():
        if node["kind"] == "decision":
            edges += [Edge(name, str(target), "case", f"case {i}") for i, (_, target) in enumerate(node.get("cases", ()), 1)]
            if node.get("default"):
                edges.append(Edge(name, node["default"], "default", "default"))
            continue
        edges += [Edge(name, str(target), "ok") for target in node.get("to", ())]
        if node.get("error_to"):
            edges.append(Edge(name, node["error_to"], "error"))
    return [edge for edge in edges if edge.target in nodes]


def layout(definition: Mapping[str, Any], statuses: Mapping[str, str] | None = None, *,
           show_kill: bool = True) -> Layout:
    """Place the nodes of a stored definition (WorkflowDefinition.to_json()); `statuses`: node name -> status.

    Kill nodes are left out unless `show_kill` or the run reached them (Oozie's `show-kill`).
    """
    statuses = statuses or {}
    nodes = {str(item["name"]): item for item in definition.get("nodes", ())}
    if START not in nodes and definition.get("start"):
        nodes = {START: {"name": START, "kind": "start", "to": [definition["start"]]}, **nodes}
    hidden = {name for name, node in nodes.items() if node["kind"] == "kill" and not show_kill and name not in statuses}
    nodes = {name: node for name, node in nodes.items() if name not in hidden}
    edges = _edges(nodes)
    successors: dict[str, list[str]] = {name: [] for name in nodes}
    predecessors: dict[str, list[str]] = {name: [] for name in nodes}
    for edge in edges:
        if edge.target not in successors[edge.source]:
            successors[edge.source].append(edge.target)
            predecessors[edge.target].append(edge.source)
    # Longest-path layering in topological order (Kahn); the definition was checked acyclic at
    # submission, but a node left on a cycle is still placed (after the others) rather than lost.
    layer = dict.fromkeys(nodes, 0)
    waiting = {name: len(predecessors[name]) for name in nodes}
    ready = deque(name for name in nodes if waiting[name] == 0)
    order: list[str] = []
    while ready:
        name = ready.popleft()
        order.append(name)
        for target in successors[name]:
            layer[target] = max(layer[target], layer[name] + 1)
            waiting[target] -= 1
            if waiting[target] == 0:
                ready.append(target)
    deepest = max(layer.values(), default=0)
    for name in nodes:
        if name not in order:
            deepest += 1
            layer[name] = deepest
            order.append(name)
    rank = {name: index for index, name in enumerate(order)}
    rows: dict[int, list[str]] = {}
    for name in order:
        rows.setdefault(layer[name], []).append(name)
    position: dict[str, float] = {}
    for number in sorted(rows):
        row = rows[number]
        if number:  # barycenter of the predecessors already placed; ties keep document order
            row.sort(key=lambda n: (sum(position[p] for p in predecessors[n] if p in position)
                                    / max(1, len([p for p in predecessors[n] if p in position])), rank[n]))
        for index, name in enumerate(row):
            position[name] = index - (len(row) - 1) / 2
    widest = max((len(row) for row in rows.values()), default=1)
    width = widest * BOX_WIDTH + (widest - 1) * GAP_X + 2 * MARGIN
    middle = width / 2
    boxes: dict[str, Box] = {}
    for number, row in rows.items():
        for name in row:
            x = middle + position[name] * (BOX_WIDTH + GAP_X) - BOX_WIDTH / 2
            node = nodes[name]
            kind = str(node.get("action_type") or KIND_LABEL.get(node["kind"], node["kind"]))
            boxes[name] = Box(name, kind, number, round(x), MARGIN + number * (BOX_HEIGHT + GAP_Y), statuses.get(name, ""))
    height = (max(rows, default=0) + 1) * (BOX_HEIGHT + GAP_Y) - GAP_Y + 2 * MARGIN
    return Layout(boxes, tuple(edges), int(width), int(height))


def _short(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[:MAX_LABEL - 1] + "…"


def _taken(edge: Edge, transitions: Mapping[str, str]) -> bool:
    return edge.target in transitions.get(edge.source, "").split(",")


def svg(definition: Mapping[str, Any], statuses: Mapping[str, str] | None = None, *,
        transitions: Mapping[str, str] | None = None, show_kill: bool = True, title: str = "") -> str:
    """The DAG as a standalone SVG document (also fit to inline in HTML); `transitions`: node -> the node(s) it led to."""
    placed = layout(definition, statuses, show_kill=show_kill)
    transitions = transitions or {}
    # Edges that skip layers are routed around the boxes: down into the gap under their source,
    # sideways to a lane right of the drawing (one per source), down, and across the gap over
    # their target; edges between neighbouring layers are curves.
    lanes: dict[str, int] = {}
    for edge in placed.edges:
        if placed.boxes[edge.target].layer - placed.boxes[edge.source].layer > 1:
            lanes.setdefault(edge.source, len(lanes) % MAX_LANES)
    width = placed.width + (LANE_GAP * (min(len(lanes), MAX_LANES) + 1) if lanes else 0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="workflow-graph" role="img" width="{width}" '
        f'height="{placed.height}" viewBox="0 0 {width} {placed.height}" '
        f'font-family="-apple-system,Segoe UI,Helvetica,Arial,sans-serif" font-size="12">',
        f"<title>{escape(title or str(definition.get('name', 'workflow')))}</title>",
        "<defs>" + "".join(
            f'<marker id="wf-arrow-{name}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" markerHeight="9" '
            'markerUnits="userSpaceOnUse" '
            f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
            for name, colour in (("ok", OK_EDGE), ("error", ERROR_EDGE), ("taken", TAKEN_EDGE))
        ) + "</defs>",
    ]
    for edge in placed.edges:
        source, target = placed.boxes[edge.source], placed.boxes[edge.target]
        x1, y1 = source.x + BOX_WIDTH / 2, source.y + BOX_HEIGHT
        x2, y2 = target.x + BOX_WIDTH / 2, target.y
        if edge.source in lanes and target.layer - source.layer > 1:
            lane = lanes[edge.source]
            lane_x = placed.width + LANE_GAP * (lane + 1) - MARGIN / 2
            x1 += BOX_WIDTH / 4  # leaves the source's bottom right of its other edges
            x2 += BOX_WIDTH / 4 + (lane % 4) * 4
            below, above = y1 + 12 + (lane % 4) * 6, y2 - 12 - (lane % 4) * 6
            route = f"M{x1:.1f},{y1:.1f} V{below:.1f} H{lane_x:.1f} V{above:.1f} H{x2:.1f} V{y2:.1f}"
            label_at: tuple[float, float] = (x1 + 4, below - 2)
        else:
            bend = max(20.0, (y2 - y1) / 2)
            route = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} {x2:.1f},{y2:.1f}"
            label_at = ((x1 + x2) / 2 + 4, (y1 + y2) / 2)
        taken = _taken(edge, transitions)
        look = "error" if edge.kind == "error" else "taken" if taken else "ok"
        colour = {"error": ERROR_EDGE, "taken": TAKEN_EDGE, "ok": OK_EDGE}[look]
        dash = ' stroke-dasharray="6 4"' if edge.kind == "error" else ""
        parts.append(
            f'<path class="edge edge-{edge.kind}{" taken" if taken else ""}" data-source="{escape(edge.source)}" '
            f'data-target="{escape(edge.target)}" d="{route}" fill="none" stroke="{colour}" '
            f'stroke-width="{2.4 if taken else 1.4}"'
            f'{dash} marker-end="url(#wf-arrow-{look})"><title>{escape(edge.source)} → {escape(edge.target)} '
            f'({escape(edge.label or edge.kind)})</title></path>'
        )
        if edge.label:
            parts.append(f'<text x="{label_at[0]:.1f}" y="{label_at[1]:.1f}" font-size="10" '
                         f'fill="{BLUE_GREY}">{escape(edge.label)}</text>')
    for box in placed.boxes.values():
        reached = bool(box.status)
        # A kill node that was reached ended the job: drawn in the KILLED colour, whatever its own (OK) status.
        fill = status_colour("KILLED") if reached and box.kind == "kill" else node_colour(box.status)
        stroke = "none" if reached else NOT_REACHED_STROKE
        ink = PAPER if reached else INK
        shown = "start" if box.name == START else box.name
        state = box.status or "not reached"
        parts.append(
            f'<g class="node" data-node="{escape(box.name)}" data-status="{escape(box.status)}">'
            f"<title>{escape(box.name)} ({escape(box.kind)}): {escape(state)}</title>"
            f'<rect x="{box.x}" y="{box.y}" width="{BOX_WIDTH}" height="{BOX_HEIGHT}" rx="10" ry="10" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="1.2"/>'
            f'<text x="{box.x + BOX_WIDTH / 2:.1f}" y="{box.y + 18}" text-anchor="middle" font-weight="600" '
            f'fill="{ink}">{escape(_short(shown))}</text>'
            f'<text x="{box.x + BOX_WIDTH / 2:.1f}" y="{box.y + 34}" text-anchor="middle" font-size="10.5" '
            f'fill="{ink}" fill-opacity="0.85">{escape(box.kind)}{" · " + escape(box.status) if reached else ""}</text>'
            "</g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def dot(definition: Mapping[str, Any], statuses: Mapping[str, str] | None = None, *, show_kill: bool = True) -> str:
    """The DAG in Graphviz's DOT language (what Oozie's `format=dot` answers), coloured alike."""
    placed = layout(definition, statuses, show_kill=show_kill)
    lines = [f"digraph {_dot_string(str(definition.get('name', 'workflow')))} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica"];']
    for box in placed.boxes.values():
        shown = "start" if box.name == START else box.name
        label = _dot_string(shown)[:-1] + "\\n" + _dot_string(box.kind)[1:]  # two lines: name, type
        fill = node_colour(box.status)
        font = "white" if box.status else "black"
        lines.append(f'  {_dot_string(box.name)} [label={label}, fillcolor="{fill}", fontcolor="{font}"];')
    for edge in placed.edges:
        style = f', style=dashed, color="{ERROR_EDGE}"' if edge.kind == "error" else ""
        label = f", label={_dot_string(edge.label)}" if edge.label else ""
        lines.append(f"  {_dot_string(edge.source)} -> {_dot_string(edge.target)} [class={edge.kind}{label}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
