"""The issue's seed snippet, pasted unchanged, runs as a script against a real server."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict

from enterprise_ai import EnterpriseAI, Tenant

from _server import EaiServer
from helpers import deployment_row, ts

# Verbatim from the issue: only `<control-plane-url>` and `eai_live_xxx` are substituted.
SEED_SNIPPET = """\
from enterprise_ai import EnterpriseAI

client = EnterpriseAI(base_url="<control-plane-url>", api_key="eai_live_xxx", tenant="acme", locale="en")
client.finops.gpu_samples(samples=samples)
client.finops.gpu_allocation(start="2026-10-01", end="2026-10-31")
client.finops.create_allocation_policy({"name": "local-gpu-default", "deployment_pattern": "*"})
client.providers.catalog()
"""

POLICY_LINE = (
    'client.finops.create_allocation_policy({"name": "local-gpu-default", "deployment_pattern": "*"})'
)

# The one call the seed expects to fail: gpu_hourly_cost is required by the contract.
WRAP = """\
import enterprise_ai as _eai
try:
    {line}
except _eai.ValidationError as _e:
    assert _e.status == 422 and _e.code == "validation_error", _e
    assert "gpu_hourly_cost" in _e.fields, _e.details
    print("SEED-POLICY-REFUSED", _e.fields)
else:
    raise SystemExit("create_allocation_policy without gpu_hourly_cost was expected to raise ValidationError")
"""


def test_seed_snippet_runs_unchanged(
    server: EaiServer, admin: EnterpriseAI, tenants: Dict[str, Tenant], tmp_path: Path
) -> None:
    assert admin.tenants.get("acme").slug == "acme"  # registered first, via the API (fixture)
    end = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(minutes=30)
    stamps = [ts(end - dt.timedelta(seconds=15 * k)) for k in range(40, 0, -1)]
    deployment = "seed-vllm-llama-70b"
    samples_def = textwrap.dedent(
        f"""\
        stamps = {json.dumps(stamps)}
        samples = [
            {{
                "node": "gpu-node-3",
                "gpu_uuid": "GPU-seed-5e1f",
                "model": "H100-80GB",
                "namespace": "eai-inference",
                "pod": "{deployment}-0",
                "deployment_id": "{deployment}",
                "window_seconds": 15,
                "utilization": 0.82,
                "memory_used_gb": 61.2,
                "power_w": 512,
                "timestamp": t,
            }}
            for t in stamps
        ]
        """
    )
    snippet = SEED_SNIPPET.replace("<control-plane-url>", server.url).replace(
        "eai_live_xxx", server.admin_key
    )
    assert snippet.count(POLICY_LINE) == 1
    snippet = snippet.replace(POLICY_LINE + "\n", WRAP.format(line=POLICY_LINE))
    script = samples_def + "\n" + snippet + '\nprint("SEED-OK")\n'
    path = tmp_path / "seed.py"
    path.write_text(script)

    env = {k: v for k, v in os.environ.items() if not k.startswith("EAI_")}
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, (
        f"seed script failed:\n{proc.stdout}\n{proc.stderr}\n--- script ---\n{script}"
    )
    assert "SEED-POLICY-REFUSED ['gpu_hourly_cost']" in proc.stdout, proc.stdout
    assert "SEED-OK" in proc.stdout

    # The samples were stored, once.
    allocation = admin.finops.gpu_allocation(
        start=end - dt.timedelta(hours=1), end=end + dt.timedelta(hours=1)
    )
    assert deployment_row(allocation, deployment).samples == 40
    # And the catalog the snippet read lists the deployment (seen through the API).
    assert any(p.base_url.startswith(f"http://{deployment}") for p in admin.providers.catalog())
