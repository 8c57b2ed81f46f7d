"""Which tools a client of `mcpspec run` sees and may call: the spec's allowlist and the lock's pins."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp.types import Tool

from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.poisoning.screening import Guard, detail, evidence
from mcpspec.run import uris
from mcpspec.run.lockfile import ITEM_OF, KEY_OF, Kind, Lock, ToolCheck, canonical


@dataclass(frozen=True, slots=True)
class Hidden:
    """A tool the server offered that the client is not shown."""

    name: str
    reason: str  # "unlisted", "new" (not in the lock), "changed" (differs from its pin), "unoffered" (pinned, not offered) or "poisoned"
    detail: str
    kind: str = "tool"  # or "prompt", "resource", "resource template", "answer to" (initialize)
    rules: tuple[str, ...] = ()  # "poisoned": the ids of the tool-poisoning rules that found it
    evidence: tuple[str, ...] = ()  # "poisoned": each finding, for the audit log only (it quotes the server)

    @property
    def label(self) -> str:
        """How reports name it: a tool by its name, anything else after its kind."""
        return self.name if self.kind == "tool" else f"{self.kind} {self.name}"


@dataclass
class ToolPolicy:
    """The allowlist of one server and, when there is a lock, its pins.

    ``offered`` is what the server's last full tools/list said, by verdict: None until a listing has
    been seen (or after the server said its list changed), since pins are checked on what is offered.
    ``epoch`` counts the server's list_changed: a page of a listing asked for before the last one, or a
    verdict taken before it, is stale.
    """

    sandbox: EffectiveSandbox
    lock: Lock | None
    offered: dict[str, Hidden | None] | None = None
    refused_pins: set[str] = field(default_factory=set)
    pages: dict[str, Hidden | None] | None = None  # the listing being read; None until its first page
    hidden_items: dict[Kind, set[str]] = field(default_factory=dict)  # prompts, resources...: hidden by their last listing
    shown_items: dict[Kind, set[str]] = field(default_factory=dict)  # shown by a listing read since the server's last list_changed
    known_items: set[Kind] = field(default_factory=set)  # listed whole (every page) by the relay since the server's last list_changed
    items_epoch: int = 0  # counts the server's prompts and resources list_changed: a verdict taken before the last one is stale
    epoch: int = 0
    poison: Guard | None = None  # the tool-poisoning checks (mcpspec run always has them)
    refused_poisoned: set[str] = field(default_factory=set)

    def listed(self, name: str) -> bool:
        return name in self.sandbox.tools or self.sandbox.unlisted_tools == "allow"

    def poisoned(self, kind: Kind, item: Any) -> Hidden | None:
        """The verdict on an item (a model or its JSON) with a blocking tool-poisoning finding; None without one."""
        if self.poison is None:
            return None
        key, data = canonical(kind, item)
        found = self.poison.blocking(kind, {KEY_OF[kind]: key, **data})
        if not found:
            return None
        return Hidden(key, "poisoned", detail(found), ITEM_OF[kind], tuple(sorted({f.rule for f in found})), evidence(found))

    def screen_initialize(self, result: dict[str, Any]) -> tuple[dict[str, Any], Hidden | None]:
        """An initialize answer without ``instructions`` that have a blocking poisoning finding."""
        if self.poison is None or not isinstance(result.get("instructions"), str):
            return result, None
        found = self.poison.blocking("initialize", {"instructions": result["instructions"]})
        if not found:
            return result, None
        kept = {key: value for key, value in result.items() if key != "instructions"}
        return kept, Hidden("instructions", "poisoned", detail(found), "answer to initialize:", tuple(sorted({f.rule for f in found})), evidence(found))

    def screen(self, tools: Iterable[Tool]) -> tuple[list[Tool], list[Hidden]]:
        """Split offered tools into those shown and those hidden (with why)."""
        tools = list(tools)
        checks = {check.name: check for check in self.lock.check(self.sandbox.name, tools)} if self.lock is not None else {}
        shown: list[Tool] = []
        hidden: list[Hidden] = []
        for tool in tools:
            check = checks.get(tool.name)
            if not self.listed(tool.name):
                hidden.append(Hidden(tool.name, "unlisted", "the spec does not list it"))
            elif check is not None and check.verdict == "new":
                hidden.append(Hidden(tool.name, "new", "it is not in mcp-sandbox.lock"))
            elif check is not None and check.verdict == "changed":
                hidden.append(Hidden(tool.name, "changed", f"it differs from its pin in mcp-sandbox.lock ({', '.join(check.changed)})"))
            elif (verdict := self.poisoned("tools", tool)) is not None:
                hidden.append(verdict)
            else:
                shown.append(tool)
        return shown, hidden

    def screen_items(self, kind: Kind, items: list[Any]) -> tuple[list[Any], list[Hidden]]:
        """Split a listing of prompts, resources or resource templates (as JSON) into those shown and
        those hidden: with a lock, only what it pins, unchanged, is shown."""
        if self.lock is None and self.poison is None:
            return items, []
        hidden: list[Hidden] = []
        shown: list[Any] = []
        refused = self.hidden_items.setdefault(kind, set())
        current = self.shown_items.setdefault(kind, set())
        checks = self.lock.check(self.sandbox.name, items, kind) if self.lock is not None else [ToolCheck(canonical(kind, item)[0], "pinned") for item in items]
        for item, check in zip(items, checks, strict=True):
            poisoned = self.poisoned(kind, item) if check.verdict == "pinned" else None
            if check.verdict == "pinned" and poisoned is None:
                shown.append(item)
                refused.discard(check.name)
                current.add(check.name)
                continue
            refused.add(check.name)
            current.discard(check.name)
            if poisoned is not None:
                hidden.append(poisoned)
                continue
            why = "it is not in mcp-sandbox.lock" if check.verdict == "new" else f"it differs from its pin in mcp-sandbox.lock ({', '.join(check.changed)})"
            hidden.append(Hidden(check.name, check.verdict, why, ITEM_OF[kind]))
        return shown, hidden

    def item_refusal(self, kind: Kind, key: str) -> str | None:
        """Why a request naming ``key`` (a prompt's name) is refused by the lock; None when it may go on."""
        if self.lock is None:
            return f"the {ITEM_OF[kind]} {key!r} has a tool-poisoning finding" if key in self.hidden_items.get(kind, set()) else None
        if key not in self.lock.pins(self.sandbox.name, kind):
            return f"the {ITEM_OF[kind]} {key!r} is not in mcp-sandbox.lock"
        if key in self.hidden_items.get(kind, set()):
            return f"the {ITEM_OF[kind]} {key!r} differs from its pin in mcp-sandbox.lock or has a tool-poisoning finding"
        if key not in self.shown_items.get(kind, set()):  # what the server offers under this name now is unknown
            return f"the {ITEM_OF[kind]} {key!r} was not listed since the server last changed them, so it cannot be checked against mcp-sandbox.lock (list them first)"
        return None

    def resource_refusal(self, uri: str, reference: bool = False) -> str | None:
        """Why a request naming resource ``uri`` is refused (run/uris.py has the rule); None when it may go on.
        ``reference``: a completion's reference, which may name a template as it is."""
        shown, hidden = self.shown_items.get("resources", set()), self.hidden_items.get("resources", set())
        templates, hidden_templates = self.shown_items.get("resource_templates", set()), self.hidden_items.get("resource_templates", set())
        if uri in shown or (reference and uri in templates):
            return None
        if len(uri) > uris.MAX_URI_CHARS:  # every reading of it would have to be judged whole
            return f"the resource URI is longer than {uris.MAX_URI_CHARS} characters, too long to judge against what listings hide"
        spelt = uris.hidden_resource(uri, hidden)
        if spelt is not None:
            read_as = "" if spelt == uri else f" may be read as {spelt[:200]!r}, which"
            return f"the resource {uri[:200]!r}{read_as} was hidden by its listing (not pinned, changed since mcp-sandbox.lock or a tool-poisoning finding)"
        if uris.allowed_by_template(uri, templates) is not None:
            return None
        matched = uris.hidden_template(uri, hidden_templates)
        if matched is not None:
            return f"the resource {uri[:200]!r} comes under the resource template {matched[:200]!r}, which its listing hid, and under no template shown"
        if self.lock is not None:
            return f"the resource {uri[:200]!r} is neither a resource nor under a resource template that mcp-sandbox.lock pins and the server's last listing showed unchanged"
        return None

    def forget_items(self, kind: Kind) -> None:
        """The server said its prompts (or resources) changed: only a new listing shows which are pinned."""
        self.shown_items.pop(kind, None)
        self.known_items.discard(kind)
        self.items_epoch += 1

    def learn(self, tools: Iterable[Tool], hidden: Iterable[Hidden], first: bool, last: bool, epoch: int) -> None:
        """Remember the verdicts of one page of a listing asked for in ``epoch``; the last page makes them the offer."""
        if epoch != self.epoch:  # asked for before the server said its tools changed: its answer may predate the change
            return
        if first:
            self.pages = {}
        if self.pages is None:  # a later page with no first page since the last change: not a whole offer
            return
        self.pages.update({tool.name: None for tool in tools})
        self.pages.update({item.name: item for item in hidden})
        if last:
            self.offered = dict(self.pages)

    def forget(self) -> None:
        """The server said its tools changed: verdicts must be taken again, from a first page, before the next call."""
        self.offered = None
        self.pages = None
        self.epoch += 1

    @property
    def needs_listing(self) -> bool:
        """Whether a call cannot be judged before the relay lists the server's tools itself."""
        return (self.lock is not None or self.poison is not None) and self.offered is None

    def refusal(self, name: str) -> Hidden | None:
        """Why a call of ``name`` is refused by the allowlist or the pins; None when it may go on."""
        if not self.listed(name):
            return Hidden(name, "unlisted", "the spec does not list it")
        if self.lock is None and self.poison is None:
            return None
        offered = self.offered or {}
        verdict = offered.get(name)
        if verdict is not None:
            return verdict
        if self.lock is None:  # only the poisoning checks: a tool the server does not list has no definition to judge
            return None
        if name not in offered and name not in self.lock.pins(self.sandbox.name):
            return Hidden(name, "new", "it is not in mcp-sandbox.lock")
        if name not in offered:  # pinned, but what the server offers under this name now is unknown
            return Hidden(name, "unoffered", "the server does not offer it now, so it cannot be checked against mcp-sandbox.lock")
        return None
