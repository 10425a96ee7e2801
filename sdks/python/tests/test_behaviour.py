"""The SDKs' one behaviour, ``contracts/v1/sdk/behaviour.json`` (read from the repository, never a copy).

One real ``eai-gpu serve`` and one ``scripts/sdk/fault_proxy.py`` for the whole module; each case queues its
faults at the proxy, makes its call through it with the case's client and request options, then reads the
proxy's log and checks every expectation. Resources made are counted directly at the server.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import secrets
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

import pytest

import enterprise_ai
from enterprise_ai import EnterpriseAI, EnterpriseAIError
from enterprise_ai.errors import error_class
from enterprise_ai.usage import Emitter

from _server import REPO_ROOT, EaiServer

BEHAVIOUR_PATH = REPO_ROOT / "contracts" / "v1" / "sdk" / "behaviour.json"
PROXY_SCRIPT = REPO_ROOT / "scripts" / "sdk" / "fault_proxy.py"
BEHAVIOUR: Dict[str, Any] = json.loads(BEHAVIOUR_PATH.read_text(encoding="utf-8"))
CASES: List[Dict[str, Any]] = BEHAVIOUR["cases"]

#: behaviour.json's snake_case option names -> this SDK's client arguments.
CLIENT_OPTIONS = {
    "timeout_seconds": "timeout",
    "max_retries": "max_retries",
    "backoff_base_seconds": "retry_base_delay",
    "backoff_max_seconds": "retry_max_delay",
    "max_retry_after_seconds": "max_retry_after",
    "max_batch_size": "max_batch_size",
}


def _kind_classes() -> Dict[str, type]:
    """kind -> this SDK's class: every error class says its own ``kind`` (one table, the SDK's)."""
    out: Dict[str, type] = {}
    todo: List[type] = [EnterpriseAIError]
    while todo:
        cls = todo.pop()
        kind = cls.__dict__.get("kind")
        if isinstance(kind, str):
            assert kind not in out, f"two classes of kind {kind}: {out[kind]} and {cls}"
            out[kind] = cls
        todo.extend(cls.__subclasses__())
    return out


KINDS = _kind_classes()


class Proxy:
    """``scripts/sdk/fault_proxy.py`` in front of a server."""

    def __init__(self, upstream: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(PROXY_SCRIPT), "--upstream", upstream, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        marker = "listening on "
        if marker not in line:
            self.proc.kill()
            raise RuntimeError(f"fault_proxy did not start: {line!r}")
        self.url = line.split(marker, 1)[1].strip()

    def control(self, method: str, path: str, doc: Optional[Mapping[str, Any]] = None) -> Any:
        data = None if doc is None else json.dumps(doc).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=10) as answer:
            return json.loads(answer.read() or b"null")

    def queue(self, faults: List[Mapping[str, Any]]) -> None:
        self.control("POST", "/__proxy/faults", {"faults": faults})

    def log(self) -> List[Dict[str, Any]]:
        requests: List[Dict[str, Any]] = self.control("GET", "/__proxy/log")["requests"]
        return requests

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def fault_proxy(server: EaiServer) -> Iterator[Proxy]:
    proxy = Proxy(server.url)
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def case_tenant(admin: EnterpriseAI) -> str:
    """The tenant of the cases' budgets, registered once, directly at the server."""
    unique = secrets.token_hex(6)
    return admin.tenants.create(slug=f"sdk-cases-{unique}", name=f"SDK cases {unique}").id


def _fill(value: Any, subs: Mapping[str, Callable[[], str]]) -> Any:
    if isinstance(value, str):
        for name, make in subs.items():
            token = "{" + name + "}"
            if token in value:
                value = value.replace(token, make())
        return value
    if isinstance(value, dict):
        return {k: _fill(v, subs) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, subs) for v in value]
    return value


def _const(text: str) -> Callable[[], str]:
    return lambda: text


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _count(admin: EnterpriseAI, operation_id: str) -> int:
    """The resources a list operation answers, asked directly at the server."""
    lists: Dict[str, Callable[[], Any]] = {
        "listTenants": admin.tenants.list,
        "listAllocationPolicies": admin.finops.list_allocation_policies,
        "listBudgets": admin.finops.list_budgets,
        "listApiKeys": admin.auth.list_api_keys,
    }
    return len(lists[operation_id]())


def _invoke(client: EnterpriseAI, operation_id: str, body: Any, records: List[Any]) -> Any:
    """Makes a case's call with the SDK method that wraps its operation (checked by its own marker)."""
    methods: Dict[str, Tuple[Callable[..., Any], Callable[[Callable[..., Any]], Any]]] = {
        "listTenants": (client.tenants.list, lambda m: m()),
        "createTenant": (client.tenants.create, lambda m: m(**body)),
        "createAllocationPolicy": (client.finops.create_allocation_policy, lambda m: m(body)),
        "createBudget": (client.finops.create_budget, lambda m: m(body)),
        "createApiKey": (client.auth.create_api_key, lambda m: m(**body)),
        "ingestGpuSamples": (client.finops.gpu_samples, lambda m: m(samples=records)),
        "ingestUsageEvents": (client.usage.events, lambda m: m(events=records)),
    }
    method, run = methods[operation_id]
    assert enterprise_ai._registry.operation_of(method) == operation_id
    return run(method)


def test_the_client_defaults_are_the_behaviours() -> None:
    d = BEHAVIOUR["defaults"]
    client = EnterpriseAI(base_url="http://127.0.0.1:9", api_key="eai_live_defaults")
    try:
        assert client.timeout == d["timeout_seconds"]
        assert client.max_retries == d["max_retries"]
        assert client.retry_policy.base_delay == d["backoff_base_seconds"]
        assert client.retry_policy.max_delay == d["backoff_max_seconds"]
        assert client.retry_policy.max_retry_after == d["max_retry_after_seconds"]
        assert client.max_batch_size == d["max_batch_size"]
        emitter = Emitter(client)
        try:
            assert emitter.flush_interval == d["flush_interval_seconds"]
            assert emitter.max_queue_size == d["usage_max_queue"]
        finally:
            emitter.close(timeout=1)
    finally:
        client.close()


def test_error_codes_map_to_the_behaviours_kinds() -> None:
    for code, kind in BEHAVIOUR["error_kinds"].items():
        cls = error_class(code, 400)
        assert cls.kind == kind, (code, cls)
        assert KINDS[kind] is cls
    for kind, parent in BEHAVIOUR["error_kind_parents"].items():
        assert issubclass(KINDS[kind], KINDS[parent]), (kind, parent)
    assert error_class("a_code_no_sdk_knows", 404) is EnterpriseAIError
    assert EnterpriseAIError.kind == "api_error"


def test_the_retry_table_is_the_behaviours() -> None:
    policy = EnterpriseAI(base_url="http://127.0.0.1:9", api_key="eai_live_table").retry_policy
    retried = BEHAVIOUR["retried"]
    for status in range(400, 600):
        assert policy.retries_status(status, "x") == (status in retried["statuses"]), status
    for code in retried["codes_on_409"]:
        assert policy.retries_status(409, code)
    assert not policy.retries_status(409, "conflict")
    # backoff: d = min(base * 2^(n-1), max); wait in [d/2, d].
    for n in range(1, 8):
        d = min(policy.base_delay * 2 ** (n - 1), policy.max_delay)
        for _ in range(20):
            assert d / 2 <= policy.backoff(n) <= d
    assert policy.delay(1, 3.0) == 3.0
    assert policy.delay(1, policy.max_retry_after + 1) is None


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(
    case: Dict[str, Any], fault_proxy: Proxy, admin: EnterpriseAI, server: EaiServer, case_tenant: str
) -> None:
    unique = secrets.token_hex(6)
    spec = BEHAVIOUR["calls"][case["call"]]
    subs: Dict[str, Callable[[], str]] = {
        "unique": lambda: unique,
        "tenant": lambda: case_tenant,
        "uuid": lambda: str(uuid.uuid4()),
        "now": _now,
    }
    body = _fill(spec.get("body"), subs)
    request = case.get("request", {})
    records: List[Any] = []
    if "record" in spec:
        count = request.get("samples", request.get("events", spec.get("default_count", 1)))
        records = [_fill(spec["record"], {**subs, "i": _const(str(i))}) for i in range(count)]

    options: Dict[str, Any] = {CLIENT_OPTIONS[k]: v for k, v in case.get("client", {}).items()}
    if case["call"] == "ingestUsageEvents":
        # The events name no tenant: the platform key signs in to the cases' tenant (X-EAI-Tenant).
        options["tenant"] = case_tenant
    per_request = {k: v for k, v in request.items() if k in ("traceparent", "idempotency_key")}
    expect = case["expect"]
    count_with = spec.get("count_with")
    before = _count(admin, count_with) if count_with and "resources_created" in expect else None

    fault_proxy.queue(case["faults"])
    with EnterpriseAI(base_url=fault_proxy.url, api_key=server.admin_key, **options) as client:
        caller = client.with_options(**per_request) if per_request else client
        result: Any = None
        error: Optional[EnterpriseAIError] = None
        try:
            result = _invoke(caller, case["call"], body, records)
        except EnterpriseAIError as exc:
            error = exc
    log = fault_proxy.log()

    # outcome, kind, status, code
    if expect["outcome"] == "ok":
        assert error is None, f"expected success, got {error!r}"
    else:
        assert error is not None, f"expected an error, got {result!r}"
        assert type(error) is KINDS[expect["kind"]], (type(error), expect["kind"])
        if "status" in expect:
            assert error.status == expect["status"]
        if "code" in expect:
            assert error.code == expect["code"]
        if expect["kind"] == "api_error":
            assert error.body is not None and error.message
            if "code" in expect:
                assert isinstance(error.body, dict) and error.body["error"]["code"] == expect["code"]
                assert error.request_id

    # attempts, gaps
    assert len(log) == expect["attempts"], [(r["method"], r["path"], r["fault"]) for r in log]
    gaps = [b["at"] - a["at"] for a, b in zip(log, log[1:])]
    for i, least in enumerate(expect.get("min_gap_seconds", [])):
        assert gaps[i] >= least, f"gap {i} was {gaps[i]:.3f} s, at least {least} s expected"

    # idempotency keys
    keys = [r["headers"].get("idempotency-key") for r in log]
    if log and log[0]["method"] in ("POST", "DELETE"):
        assert all(keys), f"a POST/DELETE without Idempotency-Key: {keys}"
        if "idempotency_key" not in per_request:
            for k in keys:
                assert uuid.UUID(str(k)).version == 4, k
    if expect.get("same_idempotency_key"):
        assert len(set(keys)) == 1 and keys[0], keys
    if "distinct_idempotency_keys" in expect:
        assert all(keys) and len(set(keys)) == expect["distinct_idempotency_keys"], keys

    # headers, batches
    for name, value in expect.get("header", {}).items():
        for r in log:
            assert r["headers"].get(name.lower()) == value, (name, r["headers"])
    if "batch_sizes" in expect:
        assert [r["records"] for r in log] == expect["batch_sizes"]
    if "accepted" in expect:
        assert result.accepted == expect["accepted"]

    # resources made, counted at the server
    if "resources_created" in expect:
        if count_with:
            assert before is not None
            assert _count(admin, count_with) - before == expect["resources_created"]
        else:
            assert result.accepted == len(records), (result, len(records))
            # A retry the server did not replay would answer the records as duplicates.
            assert result.raw.get("duplicates", 0) == 0, result.raw

    # the request id on the result, out of equality and of the dict form
    if expect.get("request_id_on_result"):
        rid = result.request_id
        assert isinstance(rid, str) and rid
        assert "request_id" not in dataclasses.asdict(result) and "_request_id" not in repr(result)
        twin = dataclasses.replace(result)
        assert twin == result and twin.request_id is None


def test_the_suite_reads_the_repository_file() -> None:
    assert BEHAVIOUR_PATH.is_file() and Path(PROXY_SCRIPT).is_file()
    assert len({c["name"] for c in CASES}) == len(CASES)
