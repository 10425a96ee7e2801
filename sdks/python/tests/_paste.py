"""Pastes a snippet into a fresh Python REPL, line by line, as a user would; records what each statement did.

Run in a fresh interpreter (never imported by the tests)::

    python _paste.py SNIPPET_FILE NAMES_JSON OUT_JSON

``SNIPPET_FILE`` is fed to :class:`code.InteractiveConsole`, one line at a time and unchanged, exactly as the
lines typed or pasted at a ``>>>`` prompt. ``NAMES_JSON`` is an object of names the user defined before
pasting (the seed's undefined ``samples``). A statement that raises prints its traceback, as the REPL does,
and the next one still runs. ``OUT_JSON`` receives, per statement: its source, the value the REPL displayed
(type and a few attributes) and the exception it raised (type, ``status``, ``code``, ``fields``, message).
"""

from __future__ import annotations

import code
import json
import sys
from pathlib import Path
from types import CodeType
from typing import Any, Dict, List, Optional


def describe_value(value: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {"type": type(value).__name__, "module": type(value).__module__}
    for name in ("accepted", "duplicates"):
        attr = getattr(value, name, None)
        if isinstance(attr, int):
            out[name] = attr
    items = getattr(value, "items", None)
    if isinstance(items, list):
        out["deployment_ids"] = [getattr(item, "deployment_id", None) for item in items]
    deployments = getattr(value, "deployments", None)
    if isinstance(deployments, list):
        out["deployments"] = [getattr(d, "deployment_id", None) for d in deployments]
    return out


def describe_error(exc: BaseException) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "type": type(exc).__name__,
        "module": type(exc).__module__,
        "message": str(exc),
    }
    for name in ("status", "code", "fields"):
        attr = getattr(exc, name, None)
        if isinstance(attr, (int, str, list)):
            out[name] = attr
    return out


class Console(code.InteractiveConsole):
    """The standard REPL console, remembering the value displayed and the exception raised."""

    def __init__(self, names: Dict[str, Any]) -> None:
        super().__init__(locals={"__name__": "__console__", "__doc__": None, **names}, filename="<stdin>")
        self.value: Optional[Dict[str, Any]] = None
        self.error: Optional[Dict[str, Any]] = None

    def runcode(self, code: CodeType) -> None:  # as code.InteractiveInterpreter.runcode, recording
        try:
            exec(code, self.locals)
        except SystemExit:
            raise
        except BaseException as exc:
            self.error = describe_error(exc)
            self.showtraceback()

    def showsyntaxerror(self, filename: Optional[str] = None, **kwargs: Any) -> None:
        exc = sys.exc_info()[1]
        if exc is not None:
            self.error = describe_error(exc)
        super().showsyntaxerror(filename, **kwargs)


def main(argv: List[str]) -> int:
    snippet_file, names_file, out_file = argv[1:]
    sys.path[0] = ""  # as at an interactive prompt: the current folder, not this script's
    lines = Path(snippet_file).read_text(encoding="utf-8").split("\n")
    names = json.loads(Path(names_file).read_text(encoding="utf-8"))
    console = Console(names)

    def displayhook(value: Any) -> None:
        if value is not None:
            console.value = describe_value(value)
        sys.__displayhook__(value)

    sys.displayhook = displayhook
    statements: List[Dict[str, Any]] = []
    buffer: List[str] = []

    def push(line: str) -> None:
        nonlocal buffer
        if not buffer:
            console.value = None
            console.error = None
        buffer.append(line)
        if console.push(line):
            return  # an unfinished compound statement: the REPL asks for more ("...")
        if any(part.strip() for part in buffer):
            source = "\n".join(buffer).rstrip("\n")
            statements.append({"source": source, "value": console.value, "error": console.error})
        buffer = []

    for line in lines:
        push(line)
    if buffer:
        push("")  # the empty line that ends a compound statement at the prompt
    module = sys.modules.get("enterprise_ai")
    Path(out_file).write_text(
        json.dumps(
            {
                "statements": statements,
                "enterprise_ai": getattr(module, "__file__", None),
                "python": sys.executable,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
