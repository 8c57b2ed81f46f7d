"""Entry point of the ``mcpspec`` command and ``python -m mcpspec``."""

from __future__ import annotations

import sys


def main() -> None:
    # Answer --version before importing the CLI framework: pre-commit hooks and
    # scripts call it often, and it should cost no more than starting Python.
    if sys.argv[1:] in (["--version"], ["-V"]):
        from mcpspec import __version__

        print(f"mcpspec {__version__}")
        return
    from mcpspec.cli import run

    run()


if __name__ == "__main__":
    main()
