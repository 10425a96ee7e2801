"""The seed's Python snippet, exactly as written, pasted into a fresh Python REPL against a real server.

The snippet is read from ``sdks/seed/sdk-examples.txt`` (the repository's copy of the seed's "SDK examples",
section ``Python``). Each of its lines runs, unchanged but for the placeholders the seed leaves to the reader
(``<control-plane-url>``, the key ``eai_live_xxx``, and ``samples``, which it never defines), as one statement
at the ``>>>`` prompt: the policy without ``gpu_hourly_cost`` answers ``validation_error`` (422) naming that
field, and the catalog after it still runs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Dict

from enterprise_ai import EnterpriseAI, Tenant

from _server import EaiServer
from helpers import deployment_row
from snippets import (
    CONTROL_PLANE_URL,
    PLACEHOLDER_KEY,
    POLICY_LINE,
    SEED_EXAMPLES,
    assert_seed_run,
    gpu_samples,
    paste,
    seed_snippet,
)

SEED_LINES = [
    "from enterprise_ai import EnterpriseAI",
    "",
    'client = EnterpriseAI(base_url="<control-plane-url>", api_key="eai_live_xxx", tenant="acme", locale="en")',  # noqa: E501
    "client.finops.gpu_samples(samples=samples)",
    'client.finops.gpu_allocation(start="2026-10-01", end="2026-10-31")',
    POLICY_LINE,
    "client.providers.catalog()",
]


def test_the_seed_file_holds_the_seeds_python_snippet() -> None:
    # The file is the repository's copy of the seed, byte for byte; this is what the seed writes for Python.
    assert SEED_EXAMPLES.is_file(), SEED_EXAMPLES
    assert seed_snippet("Python") == SEED_LINES


def test_seed_snippet_runs_as_written(
    server: EaiServer, admin: EnterpriseAI, tenants: Dict[str, Tenant], tmp_path: Path
) -> None:
    assert admin.tenants.get("acme").slug == "acme"  # registered first, via the API (fixture)
    seed = seed_snippet("Python")
    assert sum(line.count(CONTROL_PLANE_URL) for line in seed) == 1, seed
    assert sum(line.count(PLACEHOLDER_KEY) for line in seed) == 1, seed
    assert seed.count(POLICY_LINE) == 1, seed

    # The only substitutions: the server's URL and its admin key (the seed's key is a placeholder that no
    # server accepts: keys are eai_live_ and 24 to 200 more characters).
    ran = [
        line.replace(CONTROL_PLANE_URL, server.url).replace(PLACEHOLDER_KEY, server.admin_key)
        for line in seed
    ]
    assert [
        line.replace(server.url, CONTROL_PLANE_URL).replace(server.admin_key, PLACEHOLDER_KEY) for line in ran
    ] == seed

    end = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(minutes=30)
    deployment = "seed-vllm-llama-70b"
    samples = gpu_samples(deployment, "GPU-seed-5e1f", end, 40)
    pasted = paste(ran, {"samples": samples}, tmp_path)  # `samples`: defined before pasting, as a user would

    assert_seed_run(pasted, ran, samples=40, deployment=deployment)
    # The samples were stored, once.
    allocation = admin.finops.gpu_allocation(
        start=end - dt.timedelta(hours=1), end=end + dt.timedelta(hours=1)
    )
    assert deployment_row(allocation, deployment).samples == 40
    # The catalog the snippet read lists the deployment (checked through the API), and no policy was created.
    assert any(p.base_url.startswith(f"http://{deployment}") for p in admin.providers.catalog())
    assert not [p for p in admin.finops.list_allocation_policies() if p.name == "local-gpu-default"]
