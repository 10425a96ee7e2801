"""The README's first Python snippet (Quick start), as pasted, against a real server.

The snippet is read from ``sdks/python/README.md`` (its first ```` ```python ```` block) and pasted into a
fresh Python prompt, each line unchanged but for the placeholders the README names: ``<control-plane-url>``,
``eai_live_xxx`` and ``samples``. It is the seed's Python snippet with one comment added, on the policy line,
saying what that line answers; the test checks both.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Dict, List

from enterprise_ai import EnterpriseAI, Tenant

from _server import EaiServer
from helpers import deployment_row
from snippets import (
    CONTROL_PLANE_URL,
    PLACEHOLDER_KEY,
    POLICY_LINE,
    README,
    assert_seed_run,
    gpu_samples,
    paste,
    readme_code_blocks,
    seed_snippet,
)


def quick_start() -> List[str]:
    blocks = readme_code_blocks("python")
    assert blocks, f"{README}: no ```python block"
    return blocks[0]


def test_readme_quick_start_is_the_seed_snippet_with_its_answer_noted() -> None:
    readme, seed = quick_start(), seed_snippet("Python")
    assert len(readme) == len(seed), (readme, seed)
    for got, want in zip(readme, seed):
        if want == POLICY_LINE:
            assert got.startswith(want + "  # "), got
            note = got[len(want) :]
            assert "validation_error" in note and "gpu_hourly_cost is required" in note, note
        else:
            assert got == want


def test_readme_names_the_placeholders_it_leaves() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quick start") :]
    section = section[: section.index("\n## ", 1)]
    prose = section[section.index("```python") :].split("```", 2)[2]  # after the snippet
    for name in (CONTROL_PLANE_URL, PLACEHOLDER_KEY, "samples"):
        assert f"`{name}`" in prose, f"the Quick start does not say what to put for {name}"


def test_readme_quick_start_runs_as_pasted(
    server: EaiServer, admin: EnterpriseAI, tenants: Dict[str, Tenant], tmp_path: Path
) -> None:
    assert admin.tenants.get("acme").slug == "acme"  # the README: register the tenant acme
    readme = quick_start()
    assert sum(line.count(CONTROL_PLANE_URL) for line in readme) == 1, readme
    assert sum(line.count(PLACEHOLDER_KEY) for line in readme) == 1, readme
    pasted_lines = [
        line.replace(CONTROL_PLANE_URL, server.url).replace(PLACEHOLDER_KEY, server.admin_key)
        for line in readme
    ]

    end = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(minutes=20)
    deployment = "readme-vllm-llama-70b"
    samples = gpu_samples(deployment, "GPU-readme-5e1f", end, 12)
    pasted = paste(pasted_lines, {"samples": samples}, tmp_path)

    assert_seed_run(pasted, pasted_lines, samples=12, deployment=deployment)
    allocation = admin.finops.gpu_allocation(
        start=end - dt.timedelta(hours=1), end=end + dt.timedelta(hours=1)
    )
    assert deployment_row(allocation, deployment).samples == 12
