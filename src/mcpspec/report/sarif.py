"""``--format sarif``: SARIF 2.1.0, one run, as GitHub code scanning reads it.

Rules carry a ``security-severity`` string so GitHub ranks alerts; results
carry partialFingerprints from the rule and logical path (not the line), so an
alert survives edits above it; suppressed results stay in the log with their
justification.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath
from typing import Any

from mcpspec import __version__
from mcpspec.diagnostics import format_path
from mcpspec.report.model import LintReport
from mcpspec.rules.base import SECURITY_SEVERITY, Rule, doc_sections
from mcpspec.rules.engine import SPEC_ERROR_SLUGS, Result
from mcpspec.rules.registry import all_rules

_LEVEL = {"error": "error", "critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}


def _rule_descriptor(rule: Rule) -> dict[str, Any]:
    sections = doc_sections(rule.doc)
    return {
        "id": rule.id,
        "name": rule.slug,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": sections.get("What it does", rule.summary)},
        "help": {"text": sections.get("Why is this risky", rule.summary), "markdown": rule.doc.strip()},
        "helpUri": rule.help_uri(),
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"tags": ["security", rule.category], "security-severity": SECURITY_SEVERITY[rule.severity], "precision": "high"},
    }


def _spec_error_descriptor(code: str) -> dict[str, Any]:
    slug = SPEC_ERROR_SLUGS.get(code, "spec-error")
    text = slug.replace("-", " ")
    return {
        "id": code,
        "name": slug,
        "shortDescription": {"text": f"The spec file has a problem: {text}"},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["spec"]},
    }


def _uri(file: str) -> str:
    path = PurePosixPath(file.replace("\\", "/"))
    return path.as_uri() if path.is_absolute() else str(path)


def _region(result: Result) -> dict[str, int]:
    span = result.span
    return {"startLine": span.line, "startColumn": span.col, "endLine": span.end_line, "endColumn": max(span.end_col, 1)}


def _result(result: Result, index: int) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": {"uri": _uri(result.file)}, "region": _region(result)},
    }
    if result.path:
        location["logicalLocations"] = [{"fullyQualifiedName": format_path(result.path), "kind": "member"}]
    fingerprint = hashlib.sha256(f"{result.code}\0{result.file}\0{format_path(result.path)}\0{result.message if not result.path else ''}".encode()).hexdigest()
    data: dict[str, Any] = {
        "ruleId": result.code,
        "ruleIndex": index,
        "level": _LEVEL[result.severity],
        "message": {"text": result.message},
        "locations": [location],
        "partialFingerprints": {"mcpspecLogicalPath/v1": fingerprint},
        "properties": {"severity": result.severity, **({"items": list(result.items)} if result.items else {})},
    }
    if result.related:
        data["relatedLocations"] = [
            {
                "id": number,
                "message": {"text": hop.note},
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(result.file)},
                    "region": {"startLine": hop.span.line, "startColumn": hop.span.col},
                },
            }
            for number, hop in enumerate(result.related, start=1)
        ]
    if result.related and result.code.startswith("GR"):
        data["codeFlows"] = [{"message": {"text": result.message}, "threadFlows": [{"locations": _thread_flow(result)}]}]
    if result.suppression is not None:
        kind = "inSource" if result.suppression.kind == "inline" else "external"
        data["suppressions"] = [{"kind": kind, "justification": result.suppression.justification}]
    return data


def _thread_flow(result: Result) -> list[dict[str, Any]]:
    """A graph finding's chain as a SARIF thread flow: every hop, in order, with its note and place."""
    steps: list[dict[str, Any]] = []
    for order, hop in enumerate(result.related, start=1):
        span = hop.span
        location: dict[str, Any] = {
            "message": {"text": hop.note},
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(result.file)},
                "region": {"startLine": span.line, "startColumn": span.col, "endLine": span.end_line, "endColumn": max(span.end_col, 1)},
            },
        }
        if hop.path:
            location["logicalLocations"] = [{"fullyQualifiedName": format_path(hop.path), "kind": "member"}]
        steps.append({"location": location, "executionOrder": order, "nestingLevel": 0})
    return steps


def build(report: LintReport) -> dict[str, Any]:
    catalog = {rule.id: rule for rule in all_rules()}
    codes = sorted({result.code for result in report.results})
    descriptors = [_rule_descriptor(catalog[code]) if code in catalog else _spec_error_descriptor(code) for code in codes]
    index = {code: position for position, code in enumerate(codes)}
    return {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "mcpspec", "version": __version__, "semanticVersion": __version__, "rules": descriptors}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(result, index[result.code]) for result in report.results],
            }
        ],
    }


def render(report: LintReport) -> str:
    return json.dumps(build(report), indent=2, ensure_ascii=False) + "\n"
