"""The SDK against the contract: every operation of ``contracts/v1/openapi.json`` is wrapped and every one the
SDK wraps is in it with the same method and path (from the SDK's own registry and markers); every error code
is covered, and the shapes the real server sends are the ones the contract names."""

from __future__ import annotations

import inspect
import json
from typing import Any, Dict, List, Mapping, Tuple

import httpx
import pytest

from enterprise_ai import AsyncEnterpriseAI, EnterpriseAI, Tenant
from enterprise_ai._registry import ENDPOINTS, operation_of
from enterprise_ai.errors import _BY_CODE

from _server import REPO_ROOT, EaiServer
from conftest import KeyFactory
from helpers import recent_hour, usage_event

#: The contract in the repository (the one the SDK is generated from and wraps).
DOCUMENT: Dict[str, Any] = json.loads((REPO_ROOT / "contracts" / "v1" / "openapi.json").read_text("utf-8"))
BEHAVIOUR: Dict[str, Any] = json.loads(
    (REPO_ROOT / "contracts" / "v1" / "sdk" / "behaviour.json").read_text("utf-8")
)


def document_operations(doc: Mapping[str, Any]) -> Dict[str, Tuple[str, str]]:
    """operationId -> (METHOD, path) of every operation of an OpenAPI document."""
    out: Dict[str, Tuple[str, str]] = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete") and "operationId" in op:
                out[op["operationId"]] = (method.upper(), path)
    return out


def wrapped_operations(client: Any) -> Dict[str, List[str]]:
    """operationId -> the public methods that wrap it, found by the SDK's own markers on the client's class
    and on the classes of its resources (``client.finops``, ...)."""
    owners: List[Tuple[str, Any]] = [("client", type(client))]
    owners += [
        (name, type(value))
        for name, value in vars(client).items()
        if not name.startswith("_") and type(value).__module__ == "enterprise_ai.resources"
    ]
    out: Dict[str, List[str]] = {}
    for owner, cls in owners:
        for name, member in inspect.getmembers(cls, callable):
            op = operation_of(member)
            if op is not None and not name.startswith("_"):
                out.setdefault(op, []).append(f"{owner}.{name}")
    return out


@pytest.mark.parametrize("client_class", [EnterpriseAI, AsyncEnterpriseAI])
def test_every_operation_of_the_document_is_wrapped(client_class: Any) -> None:
    client = client_class(base_url="http://127.0.0.1:9", api_key="eai_live_registry")
    wrapped = wrapped_operations(client)
    missing = set(document_operations(DOCUMENT)) - set(wrapped)
    assert not missing, f"operations of contracts/v1/openapi.json no SDK method wraps: {sorted(missing)}"
    assert "getAllocationPolicy" in wrapped


@pytest.mark.parametrize("client_class", [EnterpriseAI, AsyncEnterpriseAI])
def test_every_wrapped_operation_is_in_the_document_with_its_method_and_path(client_class: Any) -> None:
    client = client_class(base_url="http://127.0.0.1:9", api_key="eai_live_registry")
    operations = document_operations(DOCUMENT)
    for op, methods in wrapped_operations(client).items():
        assert op in operations, f"{methods} wrap {op}, which contracts/v1/openapi.json does not have"
        endpoint = ENDPOINTS[op]
        assert (endpoint.method, endpoint.path) == operations[op], (op, endpoint, operations[op])
    for op, endpoint in ENDPOINTS.items():
        assert operations.get(op) == (endpoint.method, endpoint.path), (op, endpoint)


def test_the_served_contract_is_wrapped_too(contract: Dict[str, Any]) -> None:
    """The server's own ``GET /openapi.json`` (it may lag the repository's): every operation it serves is
    wrapped, with the same method and path."""
    for op, (method, path) in document_operations(contract).items():
        assert op in ENDPOINTS, op
        assert (ENDPOINTS[op].method, ENDPOINTS[op].path) == (method, path), op


@pytest.fixture(scope="module")
def contract(server: EaiServer) -> Dict[str, Any]:
    doc: Dict[str, Any] = httpx.get(f"{server.url}/openapi.json").json()
    return doc


def test_every_error_code_has_its_exception(contract: Dict[str, Any]) -> None:
    for doc in (DOCUMENT, contract):
        codes = set(doc["components"]["schemas"]["ErrorCode"]["enum"])
        assert codes <= set(_BY_CODE), codes - set(_BY_CODE)
    assert set(_BY_CODE) == set(BEHAVIOUR["error_kinds"])


def test_audit_actor_roles_are_in_the_contract(
    contract: Dict[str, Any], admin: EnterpriseAI, new_key: KeyFactory, tenants: Dict[str, Tenant]
) -> None:
    reporter = EnterpriseAI(base_url=admin.base_url, api_key=new_key("usage_reporter"))
    reporter.usage.events(
        [usage_event("contract-dep", recent_hour(), {"tokens_in": 1}, tenant_id=tenants["acme"].id)]
    )
    reporter.close()
    allowed = set(contract["components"]["schemas"]["AuditEvent"]["properties"]["actor_role"]["enum"])
    seen = {e.actor_role for e in admin.audit.events(limit=1000)}
    assert "usage_reporter" in seen  # the SDK parses it fine (actor_role is a plain str)
    assert seen <= allowed, seen - allowed
