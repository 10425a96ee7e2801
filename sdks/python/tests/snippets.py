"""The snippets the tests run as written: the seed's (``sdks/seed/sdk-examples.txt``) and the README's, and
a way to paste them into a fresh Python REPL (``_paste.py``) in a subprocess."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from helpers import ts

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent  # sdks/python
SEED_EXAMPLES = PACKAGE.parent / "seed" / "sdk-examples.txt"  # in this repository: a clone stands alone
README = PACKAGE / "README.md"
SEED_HEADINGS = ("Python", "TypeScript", "Java", "Go")


def _strip_blank_ends(lines: List[str]) -> List[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def seed_snippet(language: str) -> List[str]:
    """The lines of the seed's snippet for ``language``: those between its heading line and the next heading
    line (``sdks/seed/README.md``), blank lines at both ends left out."""
    lines = SEED_EXAMPLES.read_text(encoding="utf-8").split("\n")
    headings = [i for i, line in enumerate(lines) if line in SEED_HEADINGS]
    assert [lines[i] for i in headings] == list(SEED_HEADINGS), (
        f"{SEED_EXAMPLES}: expected the headings {SEED_HEADINGS} once each, in order"
    )
    start = lines.index(language)
    end = next((i for i in headings if i > start), len(lines))
    snippet = _strip_blank_ends(lines[start + 1 : end])
    assert snippet, f"{SEED_EXAMPLES}: no {language} snippet"
    return snippet


def readme_code_blocks(language: str, path: Path = README) -> List[List[str]]:
    """The fenced code blocks of ``language`` (```` ```python ````) in a Markdown file, in order."""
    blocks: List[List[str]] = []
    current: Optional[List[str]] = None
    for line in path.read_text(encoding="utf-8").split("\n"):
        if current is None:
            if line.strip() == f"```{language}":
                current = []
        elif line.strip() == "```":
            blocks.append(current)
            current = None
        else:
            current.append(line)
    assert current is None, f"{path}: unterminated code block"
    return blocks


def snippet_python() -> str:
    """The interpreter the snippets run in: ``EAI_SNIPPET_PYTHON`` (test.sh sets it to a virtualenv where the
    SDK was installed as the README says), else the tests' own."""
    return os.environ.get("EAI_SNIPPET_PYTHON") or sys.executable


@dataclass
class Pasted:
    statements: List[Dict[str, Any]]
    enterprise_ai: Optional[str]
    stdout: str
    stderr: str
    text: str

    def report(self) -> str:
        return (
            f"--- pasted ---\n{self.text}\n--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}\n"
            f"--- statements ---\n{json.dumps(self.statements, indent=2)}"
        )


def paste(lines: List[str], names: Mapping[str, Any], workdir: Path) -> Pasted:
    """Pastes ``lines`` into a fresh REPL (a new interpreter, no ``EAI_*`` environment), after defining
    ``names`` there, and returns what each statement did."""
    text = "\n".join(lines) + "\n"
    (workdir / "snippet.txt").write_text(text, encoding="utf-8")
    (workdir / "names.json").write_text(json.dumps(dict(names)), encoding="utf-8")
    out = workdir / "statements.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("EAI_")}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [snippet_python(), str(TESTS / "_paste.py"), "snippet.txt", "names.json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=workdir,
    )
    assert proc.returncode == 0 and out.is_file(), (
        f"the REPL exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}\n--- pasted ---\n{text}"
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    if os.environ.get("EAI_SNIPPET_PYTHON") and result["enterprise_ai"]:
        # The installed copy ran, not this folder's sources.
        assert PACKAGE not in Path(result["enterprise_ai"]).resolve().parents, result["enterprise_ai"]
    return Pasted(result["statements"], result["enterprise_ai"], proc.stdout, proc.stderr, text)


# The seed's Python snippet (and the README's Quick start, which is it) leaves these to the reader.
CONTROL_PLANE_URL = "<control-plane-url>"
# The seed's key is a placeholder that no server accepts (a key is ``eai_live_`` and 24 to 200 more
# characters): the tests replace it with the test server's admin key, as they replace ``<control-plane-url>``
# with its URL. Nothing else in the snippet is changed.
PLACEHOLDER_KEY = "eai_live_xxx"
# The seed's one call that must fail: an allocation policy needs a gpu_hourly_cost, and the server says so.
POLICY_LINE = (
    'client.finops.create_allocation_policy({"name": "local-gpu-default", "deployment_pattern": "*"})'
)


def gpu_samples(deployment: str, gpu: str, end: dt.datetime, count: int) -> List[Dict[str, Any]]:
    """``count`` consecutive 15 s samples of one GPU of ``deployment``, the last ending at ``end``."""
    return [
        {
            "node": "gpu-node-3",
            "gpu_uuid": gpu,
            "model": "H100-80GB",
            "namespace": "eai-inference",
            "pod": f"{deployment}-0",
            "deployment_id": deployment,
            "window_seconds": 15,
            "utilization": 0.82,
            "memory_used_gb": 61.2,
            "power_w": 512,
            "timestamp": ts(end - dt.timedelta(seconds=15 * k)),
        }
        for k in range(count - 1, -1, -1)
    ]


def assert_seed_run(pasted: Pasted, ran: List[str], samples: int, deployment: str) -> None:
    """What the seed's Python snippet does at a REPL: each line is one statement, each runs; the samples are
    accepted, the allocation and the catalog are read, and only the policy without ``gpu_hourly_cost`` fails,
    with the ``validation_error`` (422) that names that field."""
    report = pasted.report()
    assert [s["source"] for s in pasted.statements] == [line for line in ran if line.strip()], report
    by_call: Dict[str, Dict[str, Any]] = {}
    for statement in pasted.statements:
        for call in ("gpu_samples", "gpu_allocation", "create_allocation_policy", "providers.catalog"):
            if f".{call}(" in statement["source"]:
                by_call[call] = statement
    assert sorted(by_call) == sorted(
        ("gpu_samples", "gpu_allocation", "create_allocation_policy", "providers.catalog")
    ), report
    failed = [s["source"] for s in pasted.statements if s["error"] is not None]
    assert failed == [by_call["create_allocation_policy"]["source"]], report

    refused = by_call["create_allocation_policy"]["error"]
    assert refused["type"] == "ValidationError" and refused["module"].startswith("enterprise_ai"), report
    assert refused["status"] == 422 and refused["code"] == "validation_error", report
    assert refused["fields"] == ["gpu_hourly_cost"], report
    assert "enterprise_ai.errors.ValidationError" in pasted.stderr, report  # the REPL showed the traceback

    stored = by_call["gpu_samples"]["value"]
    assert stored is not None and stored["type"] == "SampleIngestResult", report
    assert stored["accepted"] == samples and stored["duplicates"] == 0, report
    allocation = by_call["gpu_allocation"]["value"]
    assert allocation is not None and allocation["type"] == "Allocation", report
    catalog = by_call["providers.catalog"]["value"]  # ran after the refused policy
    assert catalog is not None and catalog["type"] == "Catalog", report
    assert deployment in catalog["deployment_ids"], report  # seen in the samples the snippet posted
    assert pasted.statements[-1] is by_call["providers.catalog"], report
