"""The hook of `mcpspec run`'s approval gate for a tool's argument rules (``when``/``otherwise``).

A rule that fires decides before the usual approval: ``allow`` lets the call run unasked,
``refuse`` refuses it, ``approve`` asks a person (every call, whatever the tool's approval says).
The label of the rule (``when[1] (output area)``, ``otherwise``) goes to the audit and to the
approver; the arguments themselves never do through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpspec.conditions.describe import rules_text
from mcpspec.conditions.evaluate import Ruling, rule
from mcpspec.ir.plan import EffectiveSandbox


def ruling(sandbox: EffectiveSandbox, tool: str, arguments: Mapping[str, Any] | None) -> Ruling | None:
    """What the tool's argument rules decide of this call; None when it has none or none decides."""
    spec = sandbox.tools.get(tool)
    if spec is None or not spec.when:
        return None
    return rule(spec.when, spec.otherwise, arguments)


def reason(found: Ruling) -> str:
    """Why the call was allowed or refused by a rule, in the words the client and the audit get."""
    if found.action == "allow":
        return f"allowed by argument rule {found.label}"
    if found.action == "refuse":
        return f"the arguments fall under argument rule {found.label}, which refuses them"
    return f"argument rule {found.label} asks for approval"


def shown(sandbox: EffectiveSandbox, tool: str, found: Ruling) -> str:
    """The rule that sent the call to the approver, as the approver reads it (the rule, not the values)."""
    spec = sandbox.tools[tool]
    if found.label == "otherwise":
        return f"otherwise: {found.action} (no rule of the tool's when caught the call)"
    index = int(found.label.removeprefix("when[").split("]", 1)[0])
    return rules_text(spec.when, None)[index]
