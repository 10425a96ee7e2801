#!/usr/bin/env python3
"""Runs every dashboard query and every alert expression through a real Prometheus (stdlib only).

  queries.py lint DASHBOARD_DIR
      the dashboards' shape: uid, title, schemaVersion, a `datasource` variable of type prometheus, every
      panel's datasource and every target's expr.
  queries.py wait PROMETHEUS_URL SECONDS EXPR...
      polls until every EXPR returns data (or fails after SECONDS).
  queries.py check PROMETHEUS_URL DASHBOARD_DIR SECONDS
      every template variable (label_values) and every target expr of every dashboard, with the variables
      substituted by `.*` (each has allValue `.*`) and Grafana's interval variables by fixed durations, must
      return data; every alert rule Prometheus loaded (the rules file) must be healthy; the alerts whose
      condition the check causes (CAUSED) must return data for their whole expression and be pending or
      firing; the others (SELECTOR_ONLY, each with why) must return data for every metric selector of their
      expression. Queries that fail are retried until SECONDS have passed (data arriving late), then reported.

Metrics another change adds (NOT_YET) may return no data: each such query is printed as a NOTE, not a failure.
"""

import json
import re
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

# Metrics allowed to return no data (none: every metric a dashboard or alert names must answer).
NOT_YET: set[str] = set()

# Alerts whose condition scripts/observe-check.sh makes true: their whole expression must return data.
CAUSED = {
    "EaiSamplerSilent": "gpu-node-7's samples end 10 minutes ago",
    "EaiUnpricedSamples": "legacy-train has samples in the last closed hour and no policy",
    "EaiDeploymentIdle": "legacy-train ran at 2 % in the last closed hour (the rule's `for: 1d` is not waited)",
    "EaiReplicaFailing": "EAI_CLICKHOUSE_URL names a port nothing listens on",
    "EaiAuditChainBroken": "audit event 2 is edited in the database and the control plane restarted",
}

# Alerts whose condition cannot be caused in a bounded time: only their selectors must return data.
SELECTOR_ONLY = {
    "EaiSamplerSpoolBacklog": "needs a sampler that has not delivered for 10 minutes",
    "EaiAllocationBatchFailing": "needs a batch that fails (its source unreadable) while the cost panels still read the same source",
    "EaiTaskWithoutLeader": "needs every replica to lose its lease (PostgreSQL unreachable) for 5 minutes",
    "EaiReplicaLagging": "needs an outbox entry undelivered for 10 minutes to a ClickHouse that took the schema",
    "EaiMetricsStale": "needs the store failing, or the refresher stopped, for 10 minutes",
    "EaiAuditChainUnverified": "needs two days without a verification",
    "EaiTokensMostlyPayIdle": "needs a deployment whose tokens pay three times their busy GPU time for 6 hours",
}

# Grafana's own variables, as a dashboard over the last hour would have them.
GRAFANA_VARS = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
    "__range_s": "3600",
    "__range_ms": "3600000",
    "__interval_ms": "15000",
}

SELECTOR = re.compile(r"\b((?:eai|DCGM)_[A-Za-z0-9_]+)(\{[^}]*\})?")


def get(prom, path, params):
    url = f"{prom}{path}?{urllib.parse.urlencode(params, doseq=True)}"
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.loads(r.read().decode())
    if body.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {body}")
    return body["data"]


def query(prom, expr):
    """The instant vector (or scalar) an expression returns."""
    data = get(prom, "/api/v1/query", {"query": expr})
    if data["resultType"] == "scalar":
        return [data["result"]]
    return data["result"]


def substitute(expr):
    for name, value in sorted(GRAFANA_VARS.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace("${" + name + "}", value).replace("$" + name, value)
    # Every dashboard variable is multi-valued with allValue `.*` (lint checks it).
    expr = re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]", ".*", expr)
    return expr


def not_yet(expr):
    return sorted({m.group(1) for m in SELECTOR.finditer(expr)} & NOT_YET)


def dashboards(folder):
    for path in sorted(Path(folder).glob("*.json")):
        yield path.name, json.loads(path.read_text())


def panels(d):
    for p in d.get("panels", []):
        yield p
        yield from p.get("panels", [])


def lint(folder):
    problems, seen = [], 0
    for name, d in dashboards(folder):
        seen += 1
        for key in ("uid", "title"):
            if not d.get(key):
                problems.append(f"{name}: no {key}")
        if int(d.get("schemaVersion", 0)) < 36:
            problems.append(f"{name}: schemaVersion {d.get('schemaVersion')} (a recent Grafana writes 36 or more)")
        variables = d.get("templating", {}).get("list", [])
        ds = [v for v in variables if v.get("name") == "datasource"]
        if not ds or ds[0].get("type") != "datasource" or ds[0].get("query") != "prometheus":
            problems.append(f"{name}: no `datasource` variable of type prometheus")
        for v in variables:
            if v.get("type") == "query" and (v.get("allValue") != ".*" or not v.get("includeAll")):
                problems.append(f"{name}: variable {v.get('name')} needs includeAll with allValue `.*`")
        for p in panels(d):
            if p.get("type") == "row":
                continue
            if (p.get("datasource") or {}).get("uid") != "${datasource}":
                problems.append(f"{name}: panel {p.get('title')!r} does not use ${{datasource}}")
            if not p.get("targets"):
                problems.append(f"{name}: panel {p.get('title')!r} has no query")
            for t in p.get("targets", []):
                if not t.get("expr"):
                    problems.append(f"{name}: panel {p.get('title')!r} target {t.get('refId')} has no expr")
    if seen < 3:
        problems.append(f"{folder}: {seen} dashboards, 3 expected")
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        sys.exit(1)
    print(f"{seen} dashboards well formed")


def wait(prom, seconds, exprs):
    deadline = time.time() + float(seconds)
    missing = list(exprs)
    while True:
        missing = [e for e in missing if not safe_query(prom, e)]
        if not missing:
            return
        if time.time() > deadline:
            sys.exit("timed out waiting for: " + "; ".join(missing))
        time.sleep(0.5)


def safe_query(prom, expr):
    try:
        return query(prom, expr)
    except Exception:  # not up yet, or a query it refuses: waited for like missing data
        return []


def variable_query(v):
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query")
    return q or v.get("definition")


def check(prom, folder, seconds):
    # (what, kind, expr): kind `data` must return data; `variable` is a label_values query.
    checks = []
    for name, d in dashboards(folder):
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") == "query":
                checks.append((f"{name} variable ${v['name']}", "variable", variable_query(v)))
        for p in panels(d):
            for t in p.get("targets", []):
                checks.append((f"{name} {p.get('title')!r} {t.get('refId')}", "data", substitute(t["expr"])))

    rules = [r for g in get(prom, "/api/v1/rules", {"type": "alert"})["groups"] for r in g["rules"]]
    names = {r["name"] for r in rules}
    expected = set(CAUSED) | set(SELECTOR_ONLY)
    failures = []
    if names != expected:
        failures.append(f"alert rules loaded {sorted(names)}, expected {sorted(expected)}")
    for r in rules:
        if r.get("health") != "ok":
            failures.append(f"alert {r['name']}: health {r.get('health')} {r.get('lastError', '')}")
        if r["name"] in CAUSED:
            checks.append((f"alert {r['name']} (caused: {CAUSED[r['name']]})", "data", r["query"]))
        else:
            why = SELECTOR_ONLY.get(r["name"], "not listed")
            print(f"NOTE alert {r['name']}: condition not caused ({why}); checking its selectors")
            for m in sorted({m.group(0) for m in SELECTOR.finditer(r["query"])}):
                checks.append((f"alert {r['name']} selector", "data", m))

    deadline = time.time() + float(seconds)
    pending = list(checks)
    while True:
        still = []
        for what, kind, expr in pending:
            if kind == "variable":
                m = re.fullmatch(r"\s*label_values\(\s*([^,]+?)\s*,\s*(\w+)\s*\)\s*", expr or "")
                if not m:
                    failures.append(f"{what}: not a label_values(metric, label) query: {expr!r}")
                    continue
                values = get(prom, f"/api/v1/label/{m.group(2)}/values", {"match[]": m.group(1)})
                if values:
                    print(f"ok   {what}: {len(values)} values ({', '.join(values[:4])}{', …' if len(values) > 4 else ''})")
                elif not_yet(m.group(1)):
                    print(f"NOTE {what}: no data yet for {', '.join(not_yet(m.group(1)))} (not merged yet)")
                else:
                    still.append((what, kind, expr))
                continue
            try:
                result = query(prom, expr)
            except Exception as e:
                failures.append(f"{what}: Prometheus refused {expr!r}: {e}")
                continue
            if result:
                print(f"ok   {what}: {len(result)} series")
            elif not_yet(expr):
                print(f"NOTE {what}: no data for {', '.join(not_yet(expr))} (added by the leader-lease change, "
                      f"not merged yet): {expr}")
            else:
                still.append((what, kind, expr))
        pending = still
        if not pending or time.time() > deadline:
            break
        time.sleep(1)
    for what, _, expr in pending:
        failures.append(f"{what}: no data for {expr}")

    # The caused alerts are pending or firing in Prometheus itself.
    active = {a["labels"]["alertname"]: a["state"] for a in get(prom, "/api/v1/alerts", {})["alerts"]}
    for name in sorted(CAUSED):
        state = active.get(name)
        if state in ("pending", "firing"):
            print(f"ok   alert {name} is {state}")
        else:
            failures.append(f"alert {name}: not pending or firing in Prometheus ({state})")

    for f in failures:
        print(f"FAIL {f}")
    total = len(checks) + len(CAUSED)
    print(f"{total - len(failures)} of {total} checks passed")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "lint":
        lint(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "wait":
        wait(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
