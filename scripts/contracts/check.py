#!/usr/bin/env python3
"""Checks the v1 contracts of eai-gpu (contracts/v1/*.json).

  (a) each JSON Schema (and every schema inside openapi.json) is a valid draft 2020-12 schema;
  (b) valid payloads (the seed examples and more) validate, invalid ones (negative power, utilization 1.5,
      unknown field, bad schema_version, currency `eur`, ...) are rejected; every decimal-string pattern
      agrees with the bounds and decimal places that crates/engine/src/wire/ enforces;
  (c) openapi.json parses, every $ref resolves, every example validates against its schema, and the
      document keeps its own rules (bearer auth on /v1, one Error envelope, X-Request-Id on every response,
      embedded copies of the contract schemas identical to the files).

Usage: python3 scripts/contracts/check.py [-v]    (Python >= 3.11; installs `jsonschema` quietly if missing)
Prints `N passed, 0 failed` and exits 0, or names every failure and exits 1.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import subprocess
import sys
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path


def _ensure_jsonschema() -> None:
    try:
        import jsonschema  # noqa: F401
        import referencing  # noqa: F401
        return
    except ImportError:
        pass
    base = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    env = {**os.environ, "PIP_ROOT_USER_ACTION": "ignore"}
    for extra in ([], ["--user"]):
        if subprocess.run(base + extra + ["jsonschema>=4.18"], check=False, env=env).returncode == 0:
            break
    import importlib
    import site

    importlib.invalidate_caches()
    if site.ENABLE_USER_SITE and site.getusersitepackages() not in sys.path:
        sys.path.append(site.getusersitepackages())  # a `--user` install made after start-up
    try:
        import jsonschema  # noqa: F401
        import referencing  # noqa: F401
    except ImportError:
        sys.exit("check.py: the `jsonschema` package (>= 4.18) is missing and `pip install jsonschema` failed")


_ensure_jsonschema()

from jsonschema import Draft202012Validator  # noqa: E402
from jsonschema.exceptions import SchemaError  # noqa: E402
from referencing import Registry, Resource  # noqa: E402
from referencing.jsonschema import DRAFT202012  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ROOT / "contracts" / "v1"
SCHEMA_FILES = {
    "GpuSample": "gpu-sample.schema.json",
    "UsageEvent": "usage-event.schema.json",
    "AuditEvent": "audit-event.schema.json",
}
OPENAPI_URI = "https://eai.example/contracts/v1/openapi.json"
BASE_ID = "https://eai.example/contracts/v1/"
VERBOSE = "-v" in sys.argv[1:]


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    def ok(self, name: str) -> None:
        self.passed += 1
        if VERBOSE:
            print(f"ok    {name}")

    def fail(self, name: str, why: str) -> None:
        self.failed.append(name)
        print(f"FAIL  {name}: {why}")

    def check(self, name: str, cond: bool, why: str = "") -> None:
        if cond:
            self.ok(name)
        else:
            self.fail(name, why or "condition does not hold")


R = Report()

# ----------------------------------------------------------------------------------------------- loading


def load(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        R.fail(f"parse {path.name}", str(e))
        return None


schemas = {k: load(CONTRACTS / f) for k, f in SCHEMA_FILES.items()}
openapi = load(CONTRACTS / "openapi.json")
if openapi is None or any(s is None for s in schemas.values()):
    print(f"{R.passed} passed, {len(R.failed)} failed")
    sys.exit(1)
for k, f in SCHEMA_FILES.items():
    R.ok(f"parse {f}")
R.ok("parse openapi.json")

registry = Registry().with_resource(OPENAPI_URI, Resource(contents=openapi, specification=DRAFT202012))
for k, s in schemas.items():
    registry = registry.with_resource(s.get("$id", k), Resource.from_contents(s, default_specification=DRAFT202012))

FORMATS = Draft202012Validator.FORMAT_CHECKER


def validator_for(schema) -> Draft202012Validator:
    return Draft202012Validator(schema, registry=registry, format_checker=FORMATS)


def component(name: str) -> Draft202012Validator:
    return validator_for({"$ref": f"{OPENAPI_URI}#/components/schemas/{name}"})


class CannotValidate(Exception):
    pass


def errors_of(v: Draft202012Validator, instance) -> list[str]:
    """Validation errors of `instance`; raises CannotValidate when the schema itself is broken (bad $ref...)."""
    try:
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in v.iter_errors(instance)]
    except Exception as e:  # noqa: BLE001 - an unresolvable $ref or a broken schema, reported as such
        raise CannotValidate(f"{type(e).__name__}: {str(e)[:300]}") from None


def section(title: str):
    """Runs one group of checks; an unexpected error fails the group instead of stopping the script."""
    def wrap(fn):
        try:
            fn()
        except CannotValidate as e:
            R.fail(title, f"cannot validate: {e}")
        except Exception as e:  # noqa: BLE001
            R.fail(title, f"{type(e).__name__}: {str(e)[:300]}")
        return fn
    return wrap


# ------------------------------------------------------------------------- (a) the schemas are schemas


def walk(node, path=""):
    """Every node with its JSON pointer (keys escaped: `/` -> `~1`, `~` -> `~0`)."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, f"{path}/{str(k).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}/{i}")


def pointer(doc, ptr: str):
    node = doc
    for raw in ptr.lstrip("/").split("/") if ptr.strip("/") else []:
        tok = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(tok)] if isinstance(node, list) else node[tok]
    return node


def deref(node):
    for _ in range(20):
        if not (isinstance(node, dict) and "$ref" in node):
            break
        node = pointer(openapi, node["$ref"][1:])
    return node


@section("contract schemas against the 2020-12 metaschema")
def _contract_metaschema() -> None:
    for k, s in schemas.items():
        name = SCHEMA_FILES[k]
        try:
            Draft202012Validator.check_schema(s)
            R.ok(f"metaschema 2020-12: {name}")
        except SchemaError as e:
            R.fail(f"metaschema 2020-12: {name}", e.message)
        R.check(f"$schema is 2020-12: {name}", s.get("$schema") == "https://json-schema.org/draft/2020-12/schema",
                f"$schema is {s.get('$schema')!r}")
        R.check(f"$id: {name}", s.get("$id") == BASE_ID + name, f"$id is {s.get('$id')!r}")
        R.check(f"closed object: {name}", s.get("additionalProperties") is False, "additionalProperties must be false")
        internal = [p for p, n in walk(s) if isinstance(n, dict) and "$ref" in n]
        R.check(f"no $ref inside {name} (embedded verbatim in openapi.json)", not internal, ", ".join(internal))


@section("schemas of openapi.json against the 2020-12 metaschema")
def _openapi_metaschema() -> None:
    def openapi_schemas():
        for name, s in openapi.get("components", {}).get("schemas", {}).items():
            yield f"#/components/schemas/{name}", s
        for path, node in walk(openapi):
            if path.startswith("/components/schemas") or not isinstance(node, dict) or "schema" not in node:
                continue
            if path.endswith("/properties") or "/schema/" in path:
                continue  # a property named `schema`, or inside a schema already checked
            yield f"#{path}/schema", node["schema"]

    bad, count = [], 0
    for where, s in openapi_schemas():
        count += 1
        try:
            Draft202012Validator.check_schema(s)
        except SchemaError as e:
            bad.append(f"{where}: {e.message}")
    R.check(f"metaschema 2020-12: the {count} schemas of openapi.json", not bad, "; ".join(bad[:5]))


# ------------------------------------------------------------------------------- (c) the OpenAPI document


@section("openapi.json references")
def _openapi_refs() -> None:
    R.check("openapi is 3.1", str(openapi.get("openapi", "")).startswith("3.1."), f"openapi = {openapi.get('openapi')!r}")
    unresolved, refs = [], 0
    for path, node in walk(openapi):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            refs += 1
            ref = node["$ref"]
            if not ref.startswith("#"):
                unresolved.append(f"{path}: external $ref {ref} (the document is served alone)")
                continue
            try:
                pointer(openapi, ref[1:])
            except (KeyError, IndexError, ValueError, TypeError):
                unresolved.append(f"{path}: {ref}")
    R.check(f"every $ref resolves ({refs} refs)", not unresolved, "; ".join(unresolved[:10]))
    for k, s in schemas.items():
        embedded = openapi.get("components", {}).get("schemas", {}).get(k)
        expected = {kk: vv for kk, vv in s.items() if kk not in ("$schema", "$id")}
        R.check(f"components.schemas.{k} == {SCHEMA_FILES[k]}", embedded == expected,
                "the embedded copy differs from the contract file: copy the file's content (without $schema and $id)")


METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
ERROR_STATUSES = {"401", "402", "403", "404", "405", "409", "413", "422", "429", "500", "503"}


@section("openapi.json operation rules")
def _openapi_operations() -> None:
    all_ids = {o.get("operationId") for item in openapi.get("paths", {}).values() for m, o in item.items() if m in METHODS}
    op_ids: dict[str, str] = {}
    problems: dict[str, list[str]] = {}
    for p, item in openapi.get("paths", {}).items():
        for m in METHODS:
            if m not in item:
                continue
            o = item[m]
            where = f"{m.upper()} {p}"
            pr = problems.setdefault(where, [])
            try:
                oid = o.get("operationId")
                if not oid:
                    pr.append("no operationId")
                elif oid in op_ids:
                    pr.append(f"operationId {oid} also used by {op_ids[oid]}")
                else:
                    op_ids[oid] = where
                security = o.get("security", openapi.get("security"))
                if p.startswith("/v1/"):
                    if security != [{"bearerAuth": []}]:
                        pr.append("a /v1 operation must require bearerAuth")
                    for st in ("401", "403", "429", "500"):
                        if st not in o.get("responses", {}):
                            pr.append(f"no {st} response")
                    if o.get("requestBody"):
                        if not {"413", "422"} <= set(o["responses"]):
                            pr.append("a body needs 413 and 422 responses")
                        if list(o["requestBody"].get("content", {})) != ["application/json"]:
                            pr.append("request bodies are application/json only")
                elif security not in (None, []):
                    pr.append("probes and /openapi.json need no authentication (security: [])")
                params = [deref(x) for x in item.get("parameters", []) + o.get("parameters", [])]
                names = {(x.get("in"), x.get("name")) for x in params}
                for seg in p.split("/"):
                    if seg.startswith("{") and ("path", seg[1:-1]) not in names:
                        pr.append(f"path parameter {seg} not declared")
                if "{" in p and "404" not in o.get("responses", {}):
                    pr.append("a path with an id needs a 404 response")
                for hdr in ("X-Request-Id", "traceparent"):
                    if ("header", hdr) not in names:
                        pr.append(f"request header {hdr} not documented")
                for st, resp in o.get("responses", {}).items():
                    r = deref(resp)
                    if "X-Request-Id" not in r.get("headers", {}):
                        pr.append(f"{st}: no X-Request-Id response header")
                    if st in ERROR_STATUSES:
                        sch = r.get("content", {}).get("application/json", {}).get("schema", {})
                        if "#/components/schemas/Error" not in json.dumps(sch):
                            pr.append(f"{st}: not the Error envelope")
                    elif not st.startswith("2"):
                        pr.append(f"{st}: undocumented error status (use one of {sorted(ERROR_STATUSES)})")
                    for lname, link in r.get("links", {}).items():
                        if link.get("operationId") not in all_ids:
                            pr.append(f"link {lname} names an unknown operation")
            except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
                pr.append(f"unreadable: {type(e).__name__}: {e}")
    for where, pr in problems.items():
        R.check(f"operation rules: {where}", not pr, "; ".join(pr))
    expected_ops = {
        "POST /v1/finops/gpu/samples", "GET /v1/finops/gpu/allocation", "POST /v1/finops/allocation-policies",
        "GET /v1/finops/allocation-policies", "POST /v1/finops/allocation-policies/{id}/supersede",
        "POST /v1/finops/allocation-policies/{id}/disable", "GET /v1/providers/catalog", "POST /v1/usage/events",
        "POST /v1/auth/api-keys", "GET /v1/audit/events", "GET /healthz", "GET /readyz", "GET /metrics",
        "GET /openapi.json",
    }
    R.check("every endpoint of SPEC §4 is documented", expected_ops <= set(problems),
            f"missing: {sorted(expected_ops - set(problems))}")
    sec = openapi.get("components", {}).get("securitySchemes", {}).get("bearerAuth", {})
    R.check("bearerAuth is HTTP bearer", sec.get("type") == "http" and sec.get("scheme") == "bearer", json.dumps(sec))
    codes = openapi["components"]["schemas"]["ErrorCode"]["enum"]
    R.check("error codes", set(codes) == {
        "unauthorized", "forbidden", "tenant_required", "not_found", "method_not_allowed", "payload_too_large",
        "conflict", "validation_error", "rate_limited", "internal", "unavailable", "budget_exceeded",
        "idempotency_key_reused", "idempotency_key_in_flight"}, f"{codes}")


@section("examples of openapi.json")
def _openapi_examples() -> None:
    bad, count = [], 0
    for path, node in walk(openapi):
        if not isinstance(node, dict) or "schema" not in node or path.startswith("/components/schemas"):
            continue
        if ("example" not in node and "examples" not in node) or path.endswith("/text~1plain"):
            continue
        v = validator_for({"$ref": f"{OPENAPI_URI}#{path}/schema"})
        exs = [("example", node["example"])] if "example" in node else []
        exs += [(en, deref(e).get("value")) for en, e in (node.get("examples") or {}).items()]
        for en, value in exs:
            count += 1
            errs = errors_of(v, value)
            if errs:
                bad.append(f"{path} [{en}]: {errs[0]}")
    for name, s in openapi["components"]["schemas"].items():
        for i, value in enumerate(s.get("examples", [])):
            count += 1
            errs = errors_of(component(name), value)
            if errs:
                bad.append(f"components.schemas.{name}.examples[{i}]: {errs[0]}")
    R.check(f"every example of openapi.json validates ({count} examples)", not bad, "; ".join(bad[:10]))


# ------------------------------------------------------------------------------------------- (b) payloads

TENANT = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10"
SAMPLE = {  # the seed example (with tenant_id: a dedicated deployment)
    "node": "gpu-node-3", "gpu_uuid": "GPU-5e1f", "model": "H100-80GB", "namespace": "eai-inference",
    "pod": "vllm-llama-70b-0", "tenant_id": TENANT, "deployment_id": "vllm-llama-70b",
    "window_seconds": 15, "utilization": 0.82, "memory_used_gb": 61.2, "power_w": 512,
}
EVENT = {
    "event_id": "0b8c5f0e-3f7a-4d2b-9c1e-5a6b7c8d9e01", "schema_version": "1.0", "tenant_id": TENANT,
    "usage_type": "gpu_local", "source": "worker", "occurred_at": "2026-10-01T10:12:00Z",
    "deployment_id": "vllm-llama-70b", "model": {"provider": "local", "name": "llama-70b-local"},
    "units": {"gpu_seconds": 12.4, "energy_wh": 1.7},
}
AUDIT = {
    "seq": 1, "occurred_at": "2026-10-01T09:00:00Z", "actor": "key_1", "actor_role": "platform_admin",
    "tenant_id": None, "action": "allocation_policy.create", "decision": "allow", "resource": "alp_1",
    "request_id": "6f1c2d3e-4b5a-4c7d-9e8f-0a1b2c3d4e5f",
    "details": {"name": "local-gpu-default", "gpu_hourly_cost": "2.10", "currency": "EUR"},
    "prev_hash": "0" * 64, "hash": "9c56cc51b374c3ba189210d5b6d4bf57790d351c96c47c02190ecf1e430635ab",
}
POLICY = {"name": "local-gpu-default", "deployment_pattern": "*", "currency": "EUR", "gpu_hourly_cost": "2.10",
          "overhead_pct": "18", "energy_kwh_price": "0.21", "pue": "1.4", "storage_gb_month_price": "0.02"}


def with_(base: dict, **changes) -> dict:
    d = copy.deepcopy(base)
    for k, v in changes.items():
        d[k] = v
    return d


def without(base: dict, *keys: str) -> dict:
    return {k: v for k, v in base.items() if k not in keys}


VALID = [
    ("GpuSample", "seed sample with tenant_id", SAMPLE),
    ("GpuSample", "shared sample (no tenant_id)", without(SAMPLE, "tenant_id")),
    ("GpuSample", "optional fields null", with_(SAMPLE, tenant_id=None, timestamp=None, storage_gb=None, gpu_fraction=None)),
    ("GpuSample", "decimal strings, MIG slice, timestamp", with_(
        SAMPLE, window_seconds="15", utilization="0.82", memory_used_gb="61.2", power_w="512.5",
        timestamp="2026-10-01T00:00:15.250+02:00", storage_gb="40", gpu_fraction="0.125", gpu_uuid="GPU-5e1f/mig-13")),
    ("GpuSample", "bounds: window 3600, utilization 0 and 1, fraction 0.000001",
     with_(SAMPLE, window_seconds=3600, utilization=0, gpu_fraction="0.000001")),
    ("GpuSample", "bounds: window 0.001, utilization \"1.000\"", with_(SAMPLE, window_seconds="0.001", utilization="1.000")),
    ("GpuSample", "253-character node", with_(SAMPLE, node="n" * 253)),
    ("UsageEvent", "gpu_local event of a worker (SDK example)", EVENT),
    ("UsageEvent", "tenant_id omitted (tenant key)", without(EVENT, "tenant_id")),
    ("UsageEvent", "tokens, cost, trace context", with_(
        EVENT, usage_type="llm_tokens", source="gateway", units={"tokens_in": 7000, "tokens_out": "1200"},
        cost={"amount": "0.0042", "currency": "EUR"}, project="support-bot", agent_id="triage", run_id="run-42")),
    ("UsageEvent", "allocation event with allocation_policy_id", with_(
        EVENT, source="allocation", units={"gpu_seconds": "182300"}, cost={"amount": "412.70", "currency": "EUR"},
        allocation_policy_id="alp_1")),
    ("UsageEvent", "empty units", with_(EVENT, units={})),
    ("UsageEvent", "optional fields null", with_(EVENT, model=None, cost=None, deployment_id=None, project=None)),
    ("AuditEvent", "first link (allow)", AUDIT),
    ("AuditEvent", "deny of a tenant key", with_(AUDIT, seq=2, prev_hash=AUDIT["hash"], actor="key_4", actor_role="viewer",
                                                 tenant_id=TENANT, decision="deny", resource=None, details={"reason": "forbidden"})),
    ("AuditEvent", "system actor, no request", with_(AUDIT, actor="system", actor_role=None, request_id=None,
                                                     action="gpu_allocation.record")),
]
INVALID = [
    ("GpuSample", "negative power", with_(SAMPLE, power_w=-1)),
    ("GpuSample", "negative power as a string", with_(SAMPLE, power_w="-1")),
    ("GpuSample", "utilization 1.5", with_(SAMPLE, utilization=1.5)),
    ("GpuSample", "utilization \"1.5\"", with_(SAMPLE, utilization="1.5")),
    ("GpuSample", "utilization 82 (percent, not divided by 100)", with_(SAMPLE, utilization=82)),
    ("GpuSample", "unknown field", with_(SAMPLE, gpu_temp_c=61)),
    ("GpuSample", "missing node", without(SAMPLE, "node")),
    ("GpuSample", "missing power_w", without(SAMPLE, "power_w")),
    ("GpuSample", "empty node", with_(SAMPLE, node="")),
    ("GpuSample", "blank node", with_(SAMPLE, node="   ")),
    ("GpuSample", "254-character pod", with_(SAMPLE, pod="p" * 254)),
    ("GpuSample", "window 0", with_(SAMPLE, window_seconds=0)),
    ("GpuSample", "window 3601", with_(SAMPLE, window_seconds=3601)),
    ("GpuSample", "window \"15.0001\" (4 places)", with_(SAMPLE, window_seconds="15.0001")),
    ("GpuSample", "gpu_fraction 0", with_(SAMPLE, gpu_fraction=0)),
    ("GpuSample", "gpu_fraction 1.5", with_(SAMPLE, gpu_fraction=1.5)),
    ("GpuSample", "negative memory", with_(SAMPLE, memory_used_gb=-0.5)),
    ("GpuSample", "memory above 2^20 GiB", with_(SAMPLE, memory_used_gb="1048577")),
    ("GpuSample", "negative storage", with_(SAMPLE, storage_gb=-1)),
    ("GpuSample", "power as a boolean", with_(SAMPLE, power_w=True)),
    ("GpuSample", "power \"1e3\" (exponent)", with_(SAMPLE, power_w="1e3")),
    ("GpuSample", "tenant_id not a uuid", with_(SAMPLE, tenant_id="acme")),
    ("GpuSample", "timestamp without T", with_(SAMPLE, timestamp="2026-10-01 00:00:15")),
    ("GpuSample", "timestamp in microseconds", with_(SAMPLE, timestamp="2026-10-01T00:00:15.123456Z")),
    ("GpuSample", "timestamp without offset", with_(SAMPLE, timestamp="2026-10-01T00:00:15")),
    ("GpuSample", "not an object", [SAMPLE]),
    ("UsageEvent", "bad schema_version", with_(EVENT, schema_version="2.0")),
    ("UsageEvent", "schema_version as a number", with_(EVENT, schema_version=1.0)),
    ("UsageEvent", "missing schema_version", without(EVENT, "schema_version")),
    ("UsageEvent", "event_id not a uuid", with_(EVENT, event_id="evt-1")),
    ("UsageEvent", "missing event_id", without(EVENT, "event_id")),
    ("UsageEvent", "missing units", without(EVENT, "units")),
    ("UsageEvent", "negative unit", with_(EVENT, units={"gpu_seconds": -1})),
    ("UsageEvent", "unit value null", with_(EVENT, units={"gpu_seconds": None})),
    ("UsageEvent", "unit above 10^15", with_(EVENT, units={"tokens_in": "1000000000000001"})),
    ("UsageEvent", "unit name in capitals", with_(EVENT, units={"Tokens": 1})),
    ("UsageEvent", "currency `eur`", with_(EVENT, cost={"amount": "1.00", "currency": "eur"})),
    ("UsageEvent", "negative cost", with_(EVENT, cost={"amount": "-1.00", "currency": "EUR"})),
    ("UsageEvent", "cost with 11 places", with_(EVENT, cost={"amount": "1.00000000001", "currency": "EUR"})),
    ("UsageEvent", "cost without currency", with_(EVENT, cost={"amount": "1.00"})),
    ("UsageEvent", "model without name", with_(EVENT, model={"provider": "local"})),
    ("UsageEvent", "unknown field", with_(EVENT, tokens=10)),
    ("UsageEvent", "occurred_at a date only", with_(EVENT, occurred_at="2026-10-01")),
    ("UsageEvent", "blank usage_type", with_(EVENT, usage_type=" ")),
    ("UsageEvent", "usage_type of 65 characters", with_(EVENT, usage_type="u" * 65)),
    ("AuditEvent", "decision maybe", with_(AUDIT, decision="maybe")),
    ("AuditEvent", "hash of 63 hex digits", with_(AUDIT, hash="a" * 63)),
    ("AuditEvent", "hash in capitals", with_(AUDIT, hash="A" * 64)),
    ("AuditEvent", "seq 0", with_(AUDIT, seq=0)),
    ("AuditEvent", "unknown field", with_(AUDIT, signature="x")),
    ("AuditEvent", "missing prev_hash", without(AUDIT, "prev_hash")),
    ("AuditEvent", "details a string", with_(AUDIT, details="created")),
    ("AuditEvent", "unknown actor_role", with_(AUDIT, actor_role="root")),
    ("AuditEvent", "nested draft (store's AuditEvent serde shape)",
     {"seq": 1, "draft": without(AUDIT, "seq", "prev_hash", "hash"), "prev_hash": "0" * 64, "hash": AUDIT["hash"]}),
]
OA_VALID = [
    ("Allocation", "the seed's item: quantities as JSON numbers, money a decimal string", {
        "period": "2026-10", "from": "2026-10-01T00:00:00Z", "to": "2026-11-01T00:00:00Z",
        "items": [{"tenant_id": TENANT, "deployment_id": "vllm-llama-70b", "gpu_seconds": 182300,
                   "gpu_memory_gb_seconds": 10230000, "energy_wh": 25900,
                   "allocated": {"amount": "412.70", "currency": "EUR"}, "policy_id": "alp_1"}],
        "deployments": [], "tenants": [], "daily": [], "gaps": [], "findings": []}),
    ("GpuSampleBatch", "seed batch", {"samples": [SAMPLE]}),
    ("UsageEventBatch", "one event", {"events": [EVENT]}),
    ("AllocationPolicyCreate", "seed policy", POLICY),
    ("AllocationPolicyCreate", "numbers, gpu_model, dates", {
        "name": "l40s", "gpu_model": "L40S", "gpu_hourly_cost": 2.1, "pue": 1, "idle_capacity": "proportional",
        "enabled": False, "effective_from": "2026-10-01", "effective_to": "2026-11-01T00:00:00Z"}),
    ("AllocationPolicySupersede", "empty body", {}),
    ("TenantCreate", "slug and name", {"slug": "acme", "name": "Acme Corp"}),
    ("BudgetCreate", "a monthly budget", {"tenant_id": TENANT, "name": "acme", "limit": {"amount": "1000.00", "currency": "EUR"},
                                          "thresholds_pct": [50, 100], "enforce": True}),
    ("ReservationCreate", "an estimate", {"action": "llm.invoke", "estimate": {"cost": 0.5, "tokens": 4000}}),
    ("ReservationCommit", "the actual", {"actual": {"cost": "0.42", "tokens": 3100}}),
    ("TenantCreate", "an id seen in data", {"slug": "globex-2", "name": "Globex", "id": TENANT}),
    ("WhoAmI", "platform key signed in to acme", {"key_id": "key_1", "role": "platform_admin", "tenant_id": None,
        "tenant": None, "acting_tenant": {"id": TENANT, "slug": "acme", "name": "Acme Corp"}}),
    ("WhoAmI", "tenant only seen in data", {"key_id": "key_2", "role": "finops", "tenant_id": TENANT,
        "tenant": {"id": TENANT, "slug": None, "name": None}, "acting_tenant": None}),
    ("AllocationPolicySupersede", "new price from a date", {"gpu_hourly_cost": "2.30", "effective_at": "2026-11-01"}),
    ("AllocationPolicyDisable", "effective_at", {"effective_at": "2026-11-01T00:00:00Z"}),
    ("AllocationPolicyDisable", "a date, a date-time with an offset", {"effective_at": "2030-01-01"}),
    ("AllocationPolicyDisable", "a date-time with milliseconds and an offset", {"effective_at": "2030-01-01T00:00:00.250+01:00"}),
    ("BudgetSupersede", "new limit from a date-time", {"limit": {"amount": "1500.00", "currency": "EUR"},
                                                       "effective_at": "2026-12-01T00:00:00+01:00"}),
    ("BudgetSupersede", "name, webhook, end date", {"name": "acme q1", "webhook_url": "https://hooks.example.com/eai?x=a%20b",
                                                    "effective_to": "2027-04-01"}),
    ("BudgetDisable", "at a date", {"effective_at": "2026-12-31"}),
    ("BudgetCreate", "dates and a webhook", {"name": "acme", "limit": {"amount": "1", "currency": "EUR"},
                                             "webhook_url": "http://10.0.0.7:8080/hook",
                                             "effective_from": "2026-12-01", "effective_to": "2027-01-01T00:00:00Z"}),
    ("ProviderCreate", "registered unconfirmed", {"deployment_id": "vllm-llama-70b",
                                                  "base_url": "http://10.0.0.7:8000/v1", "verify": False}),
    ("ProviderCreate", "IPv6 host, percent-encoded query, 253 characters",
     {"deployment_id": "d", "base_url": "http://[::1]:8000/v1?x=a%20b&p=" + "p" * 222}),
    ("ApiKeyCreate", "finops key of a tenant", {"role": "finops", "tenant_id": TENANT, "name": "finops-acme"}),
    ("ApiKeyCreate", "sampler key", {"role": "sampler"}),
    ("Error", "validation_error with details", {"error": {
        "code": "validation_error", "message": "Invalid input", "message_i18n": {"en": "Invalid input", "fr": "Données invalides"},
        "details": [{"index": 0, "field": "power_w", "reason": "must not be negative"}], "request_id": "r-1"}}),
    ("Error", "forbidden without details", {"error": {
        "code": "forbidden", "message": "Forbidden", "message_i18n": {"en": "Forbidden", "fr": "Interdit"},
        "details": None, "request_id": "r-2"}}),
]
OA_INVALID = [
    ("GpuSampleBatch", "empty batch", {"samples": []}),
    ("GpuSampleBatch", "unknown member", {"samples": [SAMPLE], "node": "x"}),
    ("GpuSampleBatch", "a bad sample inside", {"samples": [SAMPLE, with_(SAMPLE, utilization=1.5)]}),
    ("UsageEventBatch", "bad schema_version inside", {"events": [with_(EVENT, schema_version="0.9")]}),
    ("AllocationPolicyCreate", "currency `eur`", with_(POLICY, currency="eur")),
    ("AllocationPolicyCreate", "currency EURO", with_(POLICY, currency="EURO")),
    ("AllocationPolicyCreate", "PUE 0.9", with_(POLICY, pue=0.9)),
    ("AllocationPolicyCreate", "PUE \"0.99\"", with_(POLICY, pue="0.99")),
    ("AllocationPolicyCreate", "negative hourly cost", with_(POLICY, gpu_hourly_cost="-2.10")),
    ("AllocationPolicyCreate", "hourly cost with 11 places", with_(POLICY, gpu_hourly_cost="2.10000000001")),
    ("AllocationPolicyCreate", "missing name", without(POLICY, "name")),
    ("AllocationPolicyCreate", "missing gpu_hourly_cost", without(POLICY, "gpu_hourly_cost")),
    ("AllocationPolicyCreate", "unknown field", with_(POLICY, priority=1)),
    ("AllocationPolicyCreate", "idle_capacity spread", with_(POLICY, idle_capacity="spread")),
    ("AllocationPolicyCreate", "enabled \"true\"", with_(POLICY, enabled="true")),
    ("AllocationPolicyCreate", "effective_from 2026-1-1", with_(POLICY, effective_from="2026-1-1")),
    ("AllocationPolicySupersede", "unknown field", {"effective": "2026-11-01"}),
    ("ApiKeyCreate", "role root", {"role": "root"}),
    ("ApiKeyCreate", "missing role", {"tenant_id": TENANT}),
    ("Allocation", "quantities as strings", {
        "period": "2026-10", "from": "2026-10-01T00:00:00Z", "to": "2026-11-01T00:00:00Z",
        "items": [{"tenant_id": TENANT, "deployment_id": "vllm-llama-70b", "gpu_seconds": "182300",
                   "gpu_memory_gb_seconds": 10230000, "energy_wh": 25900,
                   "allocated": {"amount": "412.70", "currency": "EUR"}, "policy_id": "alp_1"}],
        "deployments": [], "tenants": [], "daily": [], "gaps": [], "findings": []}),
    ("Allocation", "allocated as a number", {
        "period": "2026-10", "from": "2026-10-01T00:00:00Z", "to": "2026-11-01T00:00:00Z",
        "items": [{"tenant_id": TENANT, "deployment_id": "vllm-llama-70b", "gpu_seconds": 182300,
                   "gpu_memory_gb_seconds": 10230000, "energy_wh": 25900,
                   "allocated": {"amount": 412.70, "currency": "EUR"}, "policy_id": "alp_1"}],
        "deployments": [], "tenants": [], "daily": [], "gaps": [], "findings": []}),
    ("TenantCreate", "slug in capitals", {"slug": "Acme", "name": "Acme Corp"}),
    ("AllocationPolicyDisable", "effective_at on April 31", {"effective_at": "2026-04-31"}),
    ("AllocationPolicyDisable", "effective_at with a space for T", {"effective_at": "2026-11-01 00:00:00Z"}),
    ("AllocationPolicyDisable", "effective_at without an offset", {"effective_at": "2026-11-01T00:00:00"}),
    ("BudgetSupersede", "effective_at not a date", {"effective_at": "next week"}),
    ("BudgetSupersede", "effective_to on February 30", {"effective_to": "2027-02-30"}),
    ("BudgetSupersede", "blank name", {"name": "   "}),
    ("BudgetSupersede", "webhook_url with a space", {"webhook_url": "https://hooks.example.com/a b"}),
    ("BudgetSupersede", "webhook_url of 254 characters", {"webhook_url": "https://h/" + "x" * 244}),
    ("BudgetSupersede", "unknown field", {"period": "month"}),
    ("BudgetDisable", "effective_at a month", {"effective_at": "2026-12"}),
    ("BudgetCreate", "effective_from tomorrow", {"name": "b", "limit": {"amount": "1", "currency": "EUR"},
                                                 "effective_from": "tomorrow"}),
    ("ProviderCreate", "base_url of 254 characters", {"deployment_id": "d", "base_url": "http://h/" + "x" * 245}),
    ("ProviderCreate", "base_url without a host", {"deployment_id": "d", "base_url": "http://:8000/v1"}),
    ("ProviderCreate", "base_url with a space", {"deployment_id": "d", "base_url": "http://a.example.com/a b"}),
    ("ProviderCreate", "base_url with a bad percent escape", {"deployment_id": "d", "base_url": "http://a/%zz"}),
    ("ProviderCreate", "base_url with a non-ASCII host", {"deployment_id": "d", "base_url": "https://exämple.com/"}),
    ("ProviderCreate", "base_url with an unclosed IPv6 host", {"deployment_id": "d", "base_url": "http://[::1/v1"}),
    ("ProviderCreate", "base_url with a bracketed host not IPv6", {"deployment_id": "d", "base_url": "http://[::::]/v1"}),
    ("ProviderCreate", "blank label", {"deployment_id": "d", "base_url": "http://a/v1", "label": "  "}),
    ("ProviderCreate", "blank deployment_id", {"deployment_id": " ", "base_url": "http://a/v1"}),
    ("BudgetCreate", "limit without currency", {"name": "b", "limit": {"amount": "1"}}),
    ("BudgetCreate", "a weekly period", {"name": "b", "period": "week", "limit": {"amount": "1", "currency": "EUR"}}),
    ("BudgetCreate", "threshold 0", {"name": "b", "limit": {"amount": "1", "currency": "EUR"}, "thresholds_pct": [0]}),
    ("BudgetCreate", "ftp webhook", {"name": "b", "limit": {"amount": "1", "currency": "EUR"}, "webhook_url": "ftp://x"}),
    ("ReservationCreate", "no estimate", {"action": "llm.invoke"}),
    ("ReservationCreate", "negative cost", {"action": "a", "estimate": {"cost": "-1"}}),
    ("ReservationCreate", "ttl of two days", {"action": "a", "estimate": {"cost": "1"}, "ttl_seconds": 172800}),
    ("TenantCreate", "slug of 64 characters", {"slug": "a" * 64, "name": "A"}),
    ("TenantCreate", "missing name", {"slug": "acme"}),
    ("TenantCreate", "empty name", {"slug": "acme", "name": ""}),
    ("TenantCreate", "id not a uuid", {"slug": "acme", "name": "Acme", "id": "acme"}),
    ("TenantCreate", "unknown field", {"slug": "acme", "name": "Acme", "owner": "x"}),
    ("Allocation", "missing findings", {"period": "2026-10", "from": "2026-10-01T00:00:00Z", "to": "2026-11-01T00:00:00Z",
                                        "items": [], "deployments": [], "tenants": [], "daily": [], "gaps": []}),
    ("Error", "unknown code", {"error": {"code": "teapot", "message": "x", "message_i18n": {"en": "x", "fr": "x"},
                                         "details": None, "request_id": "r"}}),
    ("Error", "message_i18n without fr", {"error": {"code": "internal", "message": "x", "message_i18n": {"en": "x"},
                                                    "details": None, "request_id": "r"}}),
    ("Error", "details without reason", {"error": {"code": "validation_error", "message": "x",
                                                   "message_i18n": {"en": "x", "fr": "x"},
                                                   "details": [{"field": "pue"}], "request_id": "r"}}),
]
def expect(validator: Draft202012Validator, label: str, payload, valid: bool) -> None:
    try:
        errs = errors_of(validator, payload)
    except CannotValidate as e:
        R.fail(label, f"cannot validate: {e}")
        return
    if valid:
        R.check(label, not errs, "; ".join(errs[:3]))
    else:
        R.check(label, bool(errs), "accepted, but the server rejects it")


@section("contract payloads")
def _payloads() -> None:
    validators = {k: validator_for(s) for k, s in schemas.items()}
    for kind, label, payload in VALID:
        expect(validators[kind], f"valid {kind}: {label}", payload, True)
    for kind, label, payload in INVALID:
        expect(validators[kind], f"invalid {kind}: {label}", payload, False)


@section("openapi.json payloads")
def _openapi_payloads() -> None:
    for name, label, payload in OA_VALID:
        expect(component(name), f"valid {name}: {label}", payload, True)
    for name, label, payload in OA_INVALID:
        expect(component(name), f"invalid {name}: {label}", payload, False)



# Decimal strings: every pattern against a mirror of wire/record.rs's Bounds (min, exclusive, max, places, rounds).
# Schema-valid => the server accepts (never looser). The server accepts a plain in-range value with at most the
# allowed places => schema-valid (never stricter, but for values the server only accepts after rounding).
D = Decimal


def bounds_table() -> list[tuple]:
    policy_props = openapi["components"]["schemas"]["AllocationPolicyCreate"]["properties"]
    sample_props = schemas["GpuSample"]["properties"]
    event_props = schemas["UsageEvent"]["properties"]
    BOUNDS = [  # (label, subschema, min, min_exclusive, max, dp, round)  -- crates/engine/src/wire/record.rs, wire/sample.rs
        ("sample.window_seconds", sample_props["window_seconds"], D(0), True, D(3600), 3, False),
        ("sample.utilization", sample_props["utilization"], D(0), False, D(1), 6, True),
        ("sample.gpu_fraction", sample_props["gpu_fraction"], D(0), True, D(1), 6, True),
        ("sample.memory_used_gb", sample_props["memory_used_gb"], D(0), False, D(1 << 20), 10, True),
        ("sample.power_w", sample_props["power_w"], D(0), False, D(1_000_000), 6, True),
        ("sample.storage_gb", sample_props["storage_gb"], D(0), False, D(1_000_000_000), 6, True),
        ("event.units.*", event_props["units"]["additionalProperties"], D(0), False, D(10**15), 6, True),
        ("event.cost.amount", event_props["cost"]["properties"]["amount"], D(0), False, D(10**12), 10, False),
        ("policy.gpu_hourly_cost", policy_props["gpu_hourly_cost"], D(0), False, D(10**9), 10, False),
        ("policy.overhead_pct", policy_props["overhead_pct"], D(0), False, D(10_000), 10, False),
        ("policy.energy_kwh_price", policy_props["energy_kwh_price"], D(0), False, D(1_000_000), 10, False),
        ("policy.pue", policy_props["pue"], D(1), False, D(100), 10, False),
        ("policy.storage_gb_month_price", policy_props["storage_gb_month_price"], D(0), False, D(1_000_000), 10, False),
    ]
    return BOUNDS


def places(d: Decimal) -> int:
    return max(0, -d.as_tuple().exponent)


def server_accepts(text: str, lo, lo_excl, hi, dp, rounds) -> bool:
    """wire/record.rs Record::opt_decimal, for a decimal string."""
    try:
        d = D(text.strip())
    except InvalidOperation:
        return False
    if not d.is_finite():
        return False
    if places(d) > dp:
        if not rounds:
            return False
        d = d.quantize(D(1).scaleb(-dp), rounding=ROUND_HALF_EVEN)  # rust_decimal round_dp: banker's rounding
    below = d <= lo if lo_excl else d < lo
    return not below and d <= hi


def candidates(lo: Decimal, hi: Decimal, dp: int, rng: random.Random) -> set[str]:
    """Boundary values (each bound +- 10^-k), random decimals, and non-canonical spellings."""
    out = {"0", "0.0", "1", "1.0", "-1", "-0", "-0.5", "", ".5", "5.", "+1", "01", "1e3", " 1", "1_0", "NaN", "0x10"}
    for a in (D(0), lo, hi, D(1), (lo + hi) / 2, hi / 3):
        for k in range(13):
            eps = D(1).scaleb(-k)
            for v in (a - eps, a, a + eps, a - eps / 2, a + eps / 2):
                out.add(format(v.normalize(), "f"))
                out.add(format(v, "f"))
                if v == v.to_integral_value():
                    out.add(format(v.to_integral_value(), "f") + "." + "0" * dp)
                    out.add(format(v.to_integral_value(), "f") + "." + "0" * (dp + 1))
    digits = len(str(int(hi)))
    for _ in range(400):
        ip = str(rng.randrange(0, 10 ** rng.randint(1, digits + 1)))
        fp = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, dp + 3)))
        out.add(ip + ("." + fp if fp else ""))
    return out


CANONICAL = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")


@section("decimal patterns against the wire bounds")
def _decimal_patterns() -> None:
    rng = random.Random(20261001)
    for label, sub, lo, lo_excl, hi, dp, rounds in bounds_table():
        v = validator_for(sub)
        looser, stricter, n = [], [], 0
        for c in sorted(candidates(lo, hi, dp, rng)):
            n += 1
            s_ok = not errors_of(v, c)
            srv = server_accepts(c, lo, lo_excl, hi, dp, rounds)
            if s_ok and not srv:
                looser.append(c)
            if srv and not s_ok and CANONICAL.fullmatch(c):
                d = D(c)
                if places(d) <= dp and (d > lo if lo_excl else d >= lo) and d <= hi:
                    stricter.append(c)
        R.check(f"decimal pattern of {label} is never looser than the wire bounds ({n} strings)", not looser,
                f"schema accepts what the server rejects: {looser[:5]}")
        R.check(f"decimal pattern of {label} accepts every plain in-range value", not stricter,
                f"schema rejects what the server accepts: {stricter[:5]}")
        nums = sub["anyOf"][0]
        low_ok = (nums.get("exclusiveMinimum") == lo or nums.get("minimum", lo - 1) > lo) if lo_excl else nums.get("minimum") == lo
        R.check(f"number bounds of {label}", nums.get("type") == "number" and nums.get("maximum") == hi and low_ok,
                json.dumps(nums))


# ------------------------------------------------------------------------------------------------ summary
print(f"{R.passed} passed, {len(R.failed)} failed")
if R.failed:
    sys.exit(1)
