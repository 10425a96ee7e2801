#!/usr/bin/env python3
"""Feeds a running `eai-gpu serve` through its public HTTP API for scripts/observe-check.sh (stdlib only).

  feed.py feed BASE ADMIN_KEY SAMPLER_KEY_FILE   tenants, policies, a sampler key, samples and usage events
  feed.py live-usage BASE ADMIN_KEY DEPLOYMENT   both tenants use DEPLOYMENT now (the live sampler's)
  feed.py tamper SQLITE_FILE                     edits audit event 2 in place (what someone with the database could do)

What `feed` makes true, so that the alerts' conditions hold (docs/METRICS.md, deploy/grafana/alerts.yaml):
- gpu-node-7's samples end 10 minutes ago: its sampler is silent (EaiSamplerSilent);
- gpu-node-8 runs `legacy-train`, which no policy prices (EaiUnpricedSamples), at 2 % utilization (its idle
  ratio is 0.98: EaiDeploymentIdle's expression), with a 16-minute hole that ends 2 minutes ago (a gap the
  month to date reports, unless the month began less than 2 minutes ago);
- `vllm-llama-70b` is priced and shared by two registered tenants (cost, allocated, unallocated, per tenant).
The live node gpu-node-1 is fed by a real `eai-gpu sampler` reading the DCGM fixture (started by the script);
`live-usage` makes both tenants use its deployment in the current hour, so that the month to date has tenant
costs whatever the time of the month.
"""

import json
import sqlite3
import sys
import time
import urllib.error
import urllib.request
import uuid

ACME = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10"
GLOBEX = "3d1e9b7a-5c2f-4e8d-b6a0-7f4c1e2d9a38"
WINDOW = 15


def call(base, key, method, path, body=None, expect=(200, 201)):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    if status not in expect:
        raise SystemExit(f"{method} {path}: {status} {text}")
    return json.loads(text) if text else None


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def series(node, gpu, deployment, start, end, util, power, hole=None):
    """15 s windows ending in (start, end], except those ending inside `hole`."""
    out = []
    t = start - start % WINDOW + WINDOW
    while t <= end:
        if not (hole and hole[0] < t <= hole[1]):
            out.append({
                "node": node, "gpu_uuid": gpu, "model": "H100-80GB", "namespace": "eai-inference",
                "pod": f"{deployment}-0", "deployment_id": deployment, "window_seconds": WINDOW,
                "utilization": util, "memory_used_gb": 61.2, "power_w": power, "timestamp": rfc3339(t),
            })
        t += WINDOW
    return out


def feed(base, admin, sampler_key_file):
    for slug, name, tid in [("acme", "Acme Corp", ACME), ("globex", "Globex", GLOBEX)]:
        call(base, admin, "POST", "/v1/tenants", {"slug": slug, "name": name, "id": tid})
    price = {"currency": "EUR", "gpu_hourly_cost": "2.10", "overhead_pct": "18", "energy_kwh_price": "0.21",
             "pue": "1.4", "effective_from": "2020-01-01"}
    call(base, admin, "POST", "/v1/finops/allocation-policies",
         {"name": "vllm inference", "deployment_pattern": "vllm-*", **price})
    call(base, admin, "POST", "/v1/finops/allocation-policies",
         {"name": "idle GPUs", "deployment_pattern": "idle", **price})
    key = call(base, admin, "POST", "/v1/auth/api-keys", {"role": "sampler", "name": "gpu-node-1"})["key"]
    with open(sampler_key_file, "w") as f:
        f.write(key)

    now = int(time.time())
    samples = []
    for gpu in ("GPU-7a000000-0000-0000-0000-000000000001", "GPU-7b000000-0000-0000-0000-000000000002"):
        samples += series("gpu-node-7", gpu, "vllm-llama-70b", now - 90 * 60, now - 10 * 60, 0.82, 400)
    samples += series("gpu-node-8", "GPU-8a000000-0000-0000-0000-000000000003", "legacy-train",
                      now - 90 * 60, now, 0.02, 90, hole=(now - 18 * 60, now - 2 * 60))
    for i in range(0, len(samples), 2000):
        call(base, admin, "POST", "/v1/finops/gpu/samples", {"samples": samples[i:i + 2000]})

    # Both tenants use vllm-llama-70b every 10 minutes while it runs: 7,000 and 3,000 tokens.
    usage(base, admin, "vllm-llama-70b", range(now - 85 * 60, now - 10 * 60, 600))
    # A failed sign-in (eai_auth_failures_total gets a series).
    call(base, "eai_live_" + "x" * 40, "GET", "/v1/finops/allocation-policies", expect=(401,))
    print(f"fed {len(samples)} samples, 2 policies, 2 tenants, usage events; sampler key written")


def usage(base, admin, deployment, times):
    """acme and globex use `deployment` at each of `times`: 7,000 and 3,000 tokens (four in for one out)."""
    for tenant, tokens in [(ACME, 7000), (GLOBEX, 3000)]:
        dev = call(base, admin, "POST", "/v1/auth/api-keys",
                   {"role": "developer", "tenant_id": tenant, "name": "observe"})["key"]
        events = [{"event_id": str(uuid.uuid4()), "schema_version": "1.0", "usage_type": "llm_tokens",
                   "source": "gateway", "occurred_at": rfc3339(t), "deployment_id": deployment,
                   "units": {"tokens_in": tokens * 4 // 5, "tokens_out": tokens // 5}} for t in times]
        call(base, dev, "POST", "/v1/usage/events", {"events": events})


def tamper(path):
    c = sqlite3.connect(path)
    n = c.execute("UPDATE audit_events SET body = replace(body, '\"allow\"', '\"deny\"') WHERE seq = 2").rowcount
    c.commit()
    c.close()
    if n != 1:
        raise SystemExit(f"audit event 2 not found in {path}")
    print("audit event 2 edited in place")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "feed":
        feed(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "live-usage":
        usage(sys.argv[2], sys.argv[3], sys.argv[4], [int(time.time())])
        print(f"acme and globex use {sys.argv[4]} now")
    elif len(sys.argv) == 3 and sys.argv[1] == "tamper":
        tamper(sys.argv[2])
    else:
        raise SystemExit(__doc__)
