"""The ``when:`` of a tool: argument conditions that allow, send to approval or refuse a call.

Written as the other spec models (no postponed annotations; see :mod:`mcpspec.spec.models`). The
language is in docs/run.md ("Argument conditions"); the matching is :mod:`mcpspec.conditions`.
"""

import math
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from mcpspec.conditions.glob import glob_problem
from mcpspec.conditions.paths import pattern_problem
from mcpspec.conditions.saferegex import RegexRefused, SafeRegex
from mcpspec.spec.base import SpecModel

MAX_DEPTH = 4  # all/any/not nested in one another
MAX_TESTS = 32  # argument tests in one rule
Action = Literal["allow", "approve", "refuse"]
ArgName = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^\x00]+$")]
Scalar = bool | int | float | str


class Range(SpecModel):
    """A closed numeric range: min <= value <= max (either end may be left out)."""

    min: int | float | None = Field(None, description="Smallest value allowed.", examples=[1])
    max: int | float | None = Field(None, description="Largest value allowed.", examples=[100])

    @model_validator(mode="after")
    def _finite(self) -> "Range":
        if self.min is None and self.max is None:
            raise ValueError("a range has a min, a max or both")
        if any(isinstance(end, float) and not math.isfinite(end) for end in (self.min, self.max)):
            raise ValueError("a range's ends are finite numbers")
        return self


class ArgTest(SpecModel):
    """One test of one argument: exactly one of equals, prefix, glob, regex, range."""

    arg: ArgName = Field(description="The argument's name (a top-level key of the call's arguments).", examples=["path"])
    equals: Scalar | None = Field(None, description="The argument is this string, number or boolean.", examples=["main"])
    prefix: str | None = Field(None, description="The argument starts with this (with path: true, lies in this directory).", examples=["/workspace/output"])
    glob: str | None = Field(None, description="The argument is a path this glob matches (*, ? within a segment; ** any segments).", examples=["/workspace/output/**"])
    regex: str | None = Field(None, description="The whole argument matches this regular expression (a linear-time subset).", examples=["[a-z0-9-]{1,40}"])
    range: Range | None = Field(None, description="The argument is a number in this range.", examples=[{"min": 1, "max": 100}])
    path: bool | None = Field(None, description="Compare as a normalised absolute path. Default: true for glob, false otherwise.", examples=[True])
    case: Literal["sensitive", "insensitive"] = Field("sensitive", description="How letter case is compared.", examples=["sensitive"])

    @property
    def kind(self) -> str:
        return next(name for name in ("equals", "prefix", "glob", "regex", "range") if name in self.model_fields_set)

    @property
    def is_path(self) -> bool:
        return self.path if self.path is not None else self.kind == "glob"

    @model_validator(mode="after")
    def _one_test(self) -> "ArgTest":
        given = [name for name in ("equals", "prefix", "glob", "regex", "range") if name in self.model_fields_set]
        if len(given) != 1:
            raise ValueError(f"an argument test has exactly one of equals, prefix, glob, regex, range (this one has {', '.join(given) or 'none'})")
        kind = given[0]
        if getattr(self, kind) is None:
            raise ValueError(f"{kind} needs a value")
        if self.path is False and kind == "glob":
            raise ValueError("a glob is always a path: drop path: false")
        if self.is_path and kind in ("regex", "range"):
            raise ValueError(f"path: true goes with equals, prefix or glob, not {kind}")
        if self.is_path and not isinstance(self.equals if kind == "equals" else getattr(self, kind), str):
            raise ValueError("a path condition compares strings")
        if self.is_path:
            text = str(getattr(self, kind))
            problem = pattern_problem(text) or (glob_problem(text) if kind == "glob" else None)
            if problem is not None:
                raise ValueError(f"{text!r}: {problem}")
        if kind == "regex":
            try:
                SafeRegex(str(self.regex))
            except RegexRefused as exc:
                raise ValueError(f"regex {self.regex!r}: {exc}") from None
        return self


class AllOf(SpecModel):
    """Every condition listed holds."""

    all: list["Condition"] = Field(min_length=1, max_length=16, description="Every condition holds.", examples=[[{"arg": "mode", "equals": "append"}]])


class AnyOf(SpecModel):
    """At least one condition listed holds."""

    any: list["Condition"] = Field(min_length=1, max_length=16, description="At least one condition holds.", examples=[[{"arg": "mode", "equals": "append"}]])


class NotOf(SpecModel):
    """The condition does not hold (what cannot be judged stays unjudged: see docs/run.md)."""

    not_: "Condition" = Field(alias="not", description="The condition does not hold.", examples=[{"arg": "mode", "equals": "append"}])


def _which(value: Any) -> str:
    """The member a condition is, by its key; the tags are bracketed so error paths skip them (not keys)."""
    if isinstance(value, dict):
        return next((f"[{key}]" for key in ("all", "any", "not") if key in value), "[test]")
    return next((f"[{key}]" for key, model in (("all", AllOf), ("any", AnyOf), ("not", NotOf)) if isinstance(value, model)), "[test]")


Condition = Annotated[
    Annotated[ArgTest, Tag("[test]")] | Annotated[AllOf, Tag("[all]")] | Annotated[AnyOf, Tag("[any]")] | Annotated[NotOf, Tag("[not]")],
    Discriminator(_which),
]
for _model in (AllOf, AnyOf, NotOf):
    _model.model_rebuild()


def children(condition: "ArgTest | AllOf | AnyOf | NotOf") -> list["ArgTest | AllOf | AnyOf | NotOf"]:
    if isinstance(condition, AllOf):
        return list(condition.all)
    if isinstance(condition, AnyOf):
        return list(condition.any)
    if isinstance(condition, NotOf):
        return [condition.not_]
    return []


def tests(condition: "ArgTest | AllOf | AnyOf | NotOf") -> list[ArgTest]:
    """The argument tests of a condition, in the order written."""
    if isinstance(condition, ArgTest):
        return [condition]
    return [test for child in children(condition) for test in tests(child)]


def _depth(condition: "ArgTest | AllOf | AnyOf | NotOf") -> int:
    return 1 + max((_depth(child) for child in children(condition)), default=0)


class ArgRule(SpecModel):
    """One argument rule: when its condition holds, `then` decides the call."""

    name: str | None = Field(None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$", description="A label the audit and the approver show.", examples=["output area"])
    if_: Condition = Field(alias="if", description="The condition on the call's arguments.", examples=[{"arg": "path", "glob": "/workspace/output/**"}])
    then: Action = Field(description="allow: runs without approval; approve: a person approves it; refuse: refused.", examples=["allow"])

    @model_validator(mode="after")
    def _small(self) -> "ArgRule":
        if _depth(self.if_) > MAX_DEPTH:
            raise ValueError(f"all/any/not are nested at most {MAX_DEPTH - 1} deep")
        if len(tests(self.if_)) > MAX_TESTS:
            raise ValueError(f"a rule has at most {MAX_TESTS} argument tests")
        return self
