"""Entry point of the ``mcpspec`` command and ``python -m mcpspec``."""

from __future__ import annotations

import gc
import sys


def main() -> None:
    # Answer --version before importing the CLI framework: pre-commit hooks and
    # scripts call it often, and it should cost no more than starting Python.
    if sys.argv[1:] in (["--version"], ["-V"]):
        from mcpspec import __version__

        print(f"mcpspec {__version__}")
        return
    # Start-up creates only objects that live as long as the process (modules, classes, the
    # spec models): the cyclic collector's passes over them are wasted work, a fiftieth of a
    # small lint. The CLI turns it back on for the commands that keep running (run, lock...).
    gc.disable()
    from mcpspec.cli import run

    run()


if __name__ == "__main__":
    main()
