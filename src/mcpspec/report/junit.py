"""``--format junit``: one test case per finding (failed) and per clean file (passed)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from mcpspec.diagnostics import format_path
from mcpspec.report.model import LintReport


def render(report: LintReport) -> str:
    suites = ET.Element("testsuites", name="mcpspec")
    for item in report.files:
        active = [r for r in item.results if r.suppression is None]
        suite = ET.SubElement(suites, "testsuite", name=item.file, tests=str(max(1, len(active))), failures=str(len(active)), errors="0")
        if not active:
            ET.SubElement(suite, "testcase", classname=item.file, name="mcpspec lint")
        for result in active:
            where = format_path(result.path) or f"line {result.span.line}"
            case = ET.SubElement(suite, "testcase", classname=item.file, name=f"{result.code} {result.slug} at {where}")
            failure = ET.SubElement(case, "failure", message=result.message, type=result.severity)
            failure.text = f"{result.file}:{result.span.line}:{result.span.col}: {result.code} [{result.severity}] {result.message}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
