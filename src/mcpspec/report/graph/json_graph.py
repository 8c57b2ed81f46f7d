"""The trust graph as JSON: networkx's node-link form, with the findings per node and
each server's blast radius."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from mcpspec.analysis.graph import blast_radius
from mcpspec.report.graph.view_model import GraphView, path_text
from mcpspec.rules.engine import Result

JSON_FORMAT_VERSION = 1


def json_data(shown: GraphView) -> dict[str, Any]:
    """Nodes, edges (networkx node-link form), findings per node and the blast radius of every server."""
    return {
        **_json_head(shown),
        "nodes": list(_json_nodes(shown)),
        "edges": list(_json_edges(shown)),
        "blast_radius": dict(_json_blast_radii(shown)),
    }


def _json_head(shown: GraphView) -> dict[str, Any]:
    plan = shown.graph.plan
    return {"format_version": JSON_FORMAT_VERSION, "file": plan.file, "project": plan.project, "directed": True, "multigraph": True, "graph": {}}


def _json_nodes(shown: GraphView) -> Iterator[dict[str, Any]]:
    for node in shown.nodes:
        yield {
            "id": node.id,
            "kind": node.kind,
            "label": node.label,
            "path": path_text(node.path),
            "worst": shown.worst(node.id),
            "findings": [_finding(r) for r in shown.findings.get(node.id, [])],
        }


def _json_edges(shown: GraphView) -> Iterator[dict[str, Any]]:
    for edge in shown.edges:
        yield {"source": edge.source, "target": edge.target, "kind": edge.kind, "path": path_text(edge.path), "attack_paths": shown.attack.get(edge, [])}


def _json_blast_radii(shown: GraphView) -> Iterator[tuple[str, dict[str, Any]]]:
    for name in sorted(shown.graph.plan.servers):
        yield name, blast_radius(shown.graph, name)


def _finding(result: Result) -> dict[str, Any]:
    return {"code": result.code, "severity": result.severity, "path": path_text(result.path), "line": result.span.line, "col": result.span.col, "message": result.message}


def render_json(shown: GraphView) -> str:
    """``json_data`` as one line of JSON (see :func:`json_chunks`)."""
    return "".join(json_chunks(shown))


def json_chunks(shown: GraphView) -> Iterator[str]:
    """``json_data`` as one line of JSON, in pieces of about ``CHUNK`` characters, encoded item by item.

    Encoding each node, edge and blast radius as it is made keeps only its text, not every
    dict at once, and writing the pieces as they come never holds the whole document
    (132 MB at 10,000 servers, twice over once encoded for the stream). Without indentation
    json uses its fast encoder. Pipe it through jq to read.
    """
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    yield encode(_json_head(shown))[:-1]
    yield from _joined(',"nodes":[', map(encode, _json_nodes(shown)), "]")
    yield from _joined(',"edges":[', map(encode, _json_edges(shown)), "]")
    yield from _joined(',"blast_radius":{', (f"{encode(name)}:{encode(radius)}" for name, radius in _json_blast_radii(shown)), "}}\n")


CHUNK = 1 << 16


def _joined(opening: str, items: Iterator[str], closing: str) -> Iterator[str]:
    """``opening + ",".join(items) + closing``, in pieces of about CHUNK characters."""
    pending = [opening]
    size = 0
    first = True
    for item in items:
        pending.append(item if first else "," + item)
        first = False
        size += len(item)
        if size >= CHUNK:
            yield "".join(pending)
            pending, size = [], 0
    pending.append(closing)
    yield "".join(pending)
