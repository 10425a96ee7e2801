"""The operations of ``contracts/v1/openapi.json`` the SDK wraps: operationId -> (method, path template).

The operations (:mod:`enterprise_ai._operations`) build their requests from this table only, and every public
method that wraps an operation says which with :func:`operation`; the test suite checks both against the
contract, both ways (every operation of the document is wrapped, every one wrapped is in the document with
the same method and path).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, TypeVar
from urllib.parse import quote

__all__ = ["ENDPOINTS", "Endpoint", "operation", "operation_of"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Endpoint:
    """One operation of the contract."""

    operation_id: str
    method: str
    path: str

    def expand(self, params: Optional[Mapping[str, str]] = None) -> str:
        """The path with its ``{name}`` segments filled in (each value quoted as one path segment)."""
        out = self.path
        for name, value in (params or {}).items():
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string")
            out = out.replace("{" + name + "}", quote(value, safe=""))
        if "{" in out:
            raise ValueError(f"{self.operation_id}: path parameters missing in {out}")
        return out


def _table(*rows: tuple[str, str, str]) -> Dict[str, Endpoint]:
    return {op: Endpoint(op, method, path) for op, method, path in rows}


ENDPOINTS: Dict[str, Endpoint] = _table(
    ("ingestGpuSamples", "POST", "/v1/finops/gpu/samples"),
    ("getGpuAllocation", "GET", "/v1/finops/gpu/allocation"),
    ("getGpuAllocationFocus", "GET", "/v1/finops/gpu/allocation/focus"),
    ("explainGpuAllocation", "GET", "/v1/finops/gpu/allocation/explain"),
    ("getGpuUsageBreakdown", "GET", "/v1/finops/gpu/usage"),
    ("getGpuAllocationSeries", "GET", "/v1/finops/gpu/allocation/series"),
    ("getGpuTokenCosts", "GET", "/v1/finops/gpu/token-costs"),
    ("reconcileSlurmJobs", "POST", "/v1/finops/gpu/slurm/reconciliation"),
    ("getGpuRecommendations", "GET", "/v1/finops/gpu/recommendations"),
    ("getGpuForecast", "GET", "/v1/finops/gpu/forecast"),
    ("listGpuAnomalies", "GET", "/v1/finops/gpu/anomalies"),
    ("listGpuStatements", "GET", "/v1/finops/gpu/statements"),
    ("issueGpuStatements", "POST", "/v1/finops/gpu/statements"),
    ("getGpuStatement", "GET", "/v1/finops/gpu/statements/{number}"),
    ("createAllocationPolicy", "POST", "/v1/finops/allocation-policies"),
    ("listAllocationPolicies", "GET", "/v1/finops/allocation-policies"),
    ("getAllocationPolicy", "GET", "/v1/finops/allocation-policies/{id}"),
    ("supersedeAllocationPolicy", "POST", "/v1/finops/allocation-policies/{id}/supersede"),
    ("disableAllocationPolicy", "POST", "/v1/finops/allocation-policies/{id}/disable"),
    ("listBudgets", "GET", "/v1/finops/budgets"),
    ("createBudget", "POST", "/v1/finops/budgets"),
    ("getBudget", "GET", "/v1/finops/budgets/{id}"),
    ("supersedeBudget", "POST", "/v1/finops/budgets/{id}/supersede"),
    ("disableBudget", "POST", "/v1/finops/budgets/{id}/disable"),
    ("createReservation", "POST", "/v1/finops/reservations"),
    ("getReservation", "GET", "/v1/finops/reservations/{id}"),
    ("commitReservation", "POST", "/v1/finops/reservations/{id}/commit"),
    ("releaseReservation", "POST", "/v1/finops/reservations/{id}/release"),
    ("getProvidersCatalog", "GET", "/v1/providers/catalog"),
    ("registerProvider", "POST", "/v1/providers"),
    ("ingestUsageEvents", "POST", "/v1/usage/events"),
    ("listTenants", "GET", "/v1/tenants"),
    ("createTenant", "POST", "/v1/tenants"),
    ("getTenant", "GET", "/v1/tenants/{key}"),
    ("whoAmI", "GET", "/v1/auth/whoami"),
    ("createApiKey", "POST", "/v1/auth/api-keys"),
    ("listApiKeys", "GET", "/v1/auth/api-keys"),
    ("revokeApiKey", "DELETE", "/v1/auth/api-keys/{id}"),
    ("rotateApiKey", "POST", "/v1/auth/api-keys/{id}/rotate"),
    ("listAuditEvents", "GET", "/v1/audit/events"),
    ("getAuditHead", "GET", "/v1/audit/head"),
    ("healthz", "GET", "/healthz"),
    ("readyz", "GET", "/readyz"),
    ("metrics", "GET", "/metrics"),
    ("openapi", "GET", "/openapi.json"),
)

OPERATION_ATTRIBUTE = "__eai_operation__"


def operation(operation_id: str) -> Callable[[F], F]:
    """Marks a public method as the wrapper of ``operation_id`` (which must be in :data:`ENDPOINTS`)."""
    if operation_id not in ENDPOINTS:
        raise KeyError(f"unknown operation {operation_id!r}: add it to ENDPOINTS first")

    def mark(f: F) -> F:
        setattr(f, OPERATION_ATTRIBUTE, operation_id)
        return f

    return mark


def operation_of(f: Any) -> Optional[str]:
    """The operationId a method wraps, or ``None``."""
    value = getattr(f, OPERATION_ATTRIBUTE, None)
    return value if isinstance(value, str) else None
