"""The SDK against the contract the real server serves (``GET /openapi.json``): every /v1 operation and
every error code is covered, and the shapes the server sends are the ones the contract names."""

from __future__ import annotations

from typing import Any, Dict, Set, Tuple

import httpx
import pytest

from enterprise_ai import EnterpriseAI, Tenant
from enterprise_ai.errors import _BY_CODE

from _server import EaiServer
from conftest import KeyFactory
from helpers import recent_hour, usage_event

# (method, path) of every operation the SDK implements, and the method that does it.
SDK_OPERATIONS: Dict[Tuple[str, str], str] = {
    ("POST", "/v1/finops/gpu/samples"): "finops.gpu_samples",
    ("GET", "/v1/finops/gpu/allocation"): "finops.gpu_allocation",
    ("GET", "/v1/finops/gpu/token-costs"): "finops.gpu_token_costs",
    ("GET", "/v1/finops/gpu/allocation/series"): "finops.gpu_allocation_series",
    ("GET", "/v1/finops/gpu/allocation/focus"): "finops.gpu_allocation_focus",
    ("GET", "/v1/finops/gpu/allocation/explain"): "finops.gpu_allocation_explain",
    ("GET", "/v1/finops/gpu/usage"): "finops.gpu_usage",
    ("POST", "/v1/finops/gpu/slurm/reconciliation"): "finops.gpu_slurm_reconciliation",
    ("POST", "/v1/finops/allocation-policies"): "finops.create_allocation_policy",
    ("GET", "/v1/finops/allocation-policies"): "finops.list_allocation_policies",
    ("GET", "/v1/finops/allocation-policies/{id}"): "finops.get_allocation_policy",
    ("POST", "/v1/finops/allocation-policies/{id}/supersede"): "finops.supersede_allocation_policy",
    ("POST", "/v1/finops/allocation-policies/{id}/disable"): "finops.disable_allocation_policy",
    ("POST", "/v1/finops/budgets"): "finops.create_budget",
    ("GET", "/v1/finops/budgets"): "finops.list_budgets",
    ("GET", "/v1/finops/budgets/{id}"): "finops.get_budget",
    ("POST", "/v1/finops/budgets/{id}/supersede"): "finops.supersede_budget",
    ("POST", "/v1/finops/budgets/{id}/disable"): "finops.disable_budget",
    ("POST", "/v1/finops/reservations"): "finops.reserve",
    ("GET", "/v1/finops/reservations/{id}"): "finops.get_reservation",
    ("POST", "/v1/finops/reservations/{id}/commit"): "finops.commit_reservation",
    ("POST", "/v1/finops/reservations/{id}/release"): "finops.release_reservation",
    ("GET", "/v1/providers/catalog"): "providers.catalog",
    ("POST", "/v1/providers"): "providers.register",
    ("POST", "/v1/usage/events"): "usage.events",
    ("POST", "/v1/tenants"): "tenants.create",
    ("GET", "/v1/tenants"): "tenants.list",
    ("GET", "/v1/tenants/{key}"): "tenants.get",
    ("GET", "/v1/auth/whoami"): "auth.whoami",
    ("POST", "/v1/auth/api-keys"): "auth.create_api_key",
    ("GET", "/v1/auth/api-keys"): "auth.list_api_keys",
    ("DELETE", "/v1/auth/api-keys/{id}"): "auth.revoke_api_key",
    ("POST", "/v1/auth/api-keys/{id}/rotate"): "auth.rotate_api_key",
    ("GET", "/v1/audit/events"): "audit.events",
    ("GET", "/v1/audit/head"): "audit.head",
}


@pytest.fixture(scope="module")
def contract(server: EaiServer) -> Dict[str, Any]:
    doc: Dict[str, Any] = httpx.get(f"{server.url}/openapi.json").json()
    return doc


def test_every_v1_operation_is_in_the_sdk(contract: Dict[str, Any], admin: EnterpriseAI) -> None:
    served: Set[Tuple[str, str]] = {
        (method.upper(), path)
        for path, item in contract["paths"].items()
        if path.startswith("/v1/")
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert served == set(SDK_OPERATIONS), served ^ set(SDK_OPERATIONS)
    for dotted in SDK_OPERATIONS.values():
        resource, method = dotted.split(".")
        assert callable(getattr(getattr(admin, resource), method)), dotted


def test_every_error_code_has_its_exception(contract: Dict[str, Any]) -> None:
    codes = set(contract["components"]["schemas"]["ErrorCode"]["enum"])
    assert codes == set(_BY_CODE)


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
