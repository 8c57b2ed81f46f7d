"""Whether output gets ANSI colours: ``--color auto|always|never`` and the environment.

``always`` and ``never`` decide alone. ``auto`` (the default) colours a terminal only, and
follows the conventions of no-color.org and force-color.org: a non-empty ``NO_COLOR`` turns
colour off, else a non-empty ``FORCE_COLOR`` turns it on even when the output is not a
terminal (CI logs). ``NO_COLOR`` wins over ``FORCE_COLOR``, as in CPython.
"""

from __future__ import annotations

from collections.abc import Mapping

COLOR_CHOICES = ("auto", "always", "never")


def colour_wanted(choice: str, stream: object, environ: Mapping[str, str]) -> bool:
    """Whether to colour what goes to ``stream``; ValueError for a choice other than COLOR_CHOICES."""
    if choice not in COLOR_CHOICES:
        raise ValueError(f"--color must be one of {', '.join(COLOR_CHOICES)}, not {choice!r}")
    if choice != "auto":
        return choice == "always"
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())
