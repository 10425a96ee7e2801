"""Every endpoint of the API as an operation (see :mod:`enterprise_ai._core`), shared by the sync and the
async resources: the paths, parameters, bodies, idempotency and result types live here only."""

from __future__ import annotations

import os
from decimal import Decimal
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ._core import (
    ClientConfig,
    Op,
    RawJson,
    as_object,
    call,
    ingest,
    path_segment,
    prepare_events,
    prepare_samples,
    split_count,
)
from ._json import DateLike, decimal_text, format_date_param
from .types import (
    Allocation,
    AllocationExplanation,
    AllocationPolicy,
    AllocationPolicyChange,
    AllocationPolicyCreated,
    AllocationPolicyList,
    AllocationSeries,
    ApiKey,
    ApiKeyCreated,
    ApiKeyList,
    AuditEventList,
    AuditHead,
    Budget,
    BudgetChange,
    BudgetList,
    Catalog,
    GpuUsageBreakdown,
    Money,
    Provider,
    Reservation,
    SampleIngestResult,
    SlurmReconciliation,
    Tenant,
    TenantList,
    TokenCostList,
    UsageIngestResult,
    WhoAmI,
)

SAMPLES_PATH = "/v1/finops/gpu/samples"
EVENTS_PATH = "/v1/usage/events"
POLICIES_PATH = "/v1/finops/allocation-policies"
BUDGETS_PATH = "/v1/finops/budgets"
RESERVATIONS_PATH = "/v1/finops/reservations"


def _body(positional: Optional[Mapping[str, Any]], keywords: Mapping[str, Any], what: str) -> Dict[str, Any]:
    if positional is not None and not isinstance(positional, Mapping):
        raise TypeError(f"{what} must be a mapping, not {type(positional).__name__}")
    body: Dict[str, Any] = dict(positional or {})
    body.update(keywords)
    return body


# ---------------------------------------------------------------------------------------------- finops


def gpu_samples(
    cfg: ClientConfig,
    samples: Iterable[Mapping[str, Any]],
    *,
    batch_size: Optional[int],
    split_on_payload_too_large: Optional[bool],
) -> Op[SampleIngestResult]:
    records = prepare_samples(samples)

    def finish(totals: Dict[str, Any], requests: int) -> SampleIngestResult:
        return SampleIngestResult(
            accepted=split_count(totals, "accepted"),
            duplicates=split_count(totals, "duplicates"),
            requests=requests,
            raw=totals,
        )

    return ingest(
        cfg,
        SAMPLES_PATH,
        "samples",
        records,
        finish,
        batch_size=batch_size,
        split_on_payload_too_large=split_on_payload_too_large,
    )


def gpu_allocation(cfg: ClientConfig, start: Optional[DateLike], end: Optional[DateLike]) -> Op[Allocation]:
    return call(
        cfg,
        "GET",
        "/v1/finops/gpu/allocation",
        lambda d: Allocation.from_json(as_object(d)),
        params=_period(start, end),
        idempotent=True,
    )


def gpu_allocation_explain(
    cfg: ClientConfig,
    deployment_id: str,
    start: Optional[DateLike],
    end: Optional[DateLike],
    tenant_id: Optional[str],
) -> Op[AllocationExplanation]:
    return call(
        cfg,
        "GET",
        "/v1/finops/gpu/allocation/explain",
        lambda d: AllocationExplanation.from_json(as_object(d)),
        params={**_period(start, end), "deployment_id": deployment_id, "tenant_id": tenant_id},
        idempotent=True,
    )


def _csv(values: Union[str, Sequence[str], None], what: str) -> Optional[str]:
    """A comma-separated query parameter: one string as it is, a sequence joined (``None``: left out)."""
    if values is None or isinstance(values, str):
        return values
    out: List[str] = []
    for v in values:
        if not isinstance(v, str):
            raise TypeError(f"{what} must be strings, not {type(v).__name__}")
        out.append(v)
    return ",".join(out)


def _usage_filter(filter: Optional[Mapping[str, Union[str, Sequence[str]]]]) -> Optional[str]:
    """``{"deployment": "a", "node": ["n1", "n2"]}`` -> ``deployment:a,node:n1,node:n2`` (a comma cannot be
    sent inside a value: ``ValueError``)."""
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a mapping, not {type(filter).__name__}")
    pairs: List[str] = []
    for dimension, values in filter.items():
        for v in [values] if isinstance(values, str) else values:
            if not isinstance(v, str):
                raise TypeError(f"filter values must be strings, not {type(v).__name__}")
            if "," in v:
                raise ValueError(f"a filter value cannot hold a comma: {dimension}={v!r}")
            pairs.append(f"{dimension}:{v}")
    return ",".join(pairs) or None


def gpu_usage(
    cfg: ClientConfig,
    start: Optional[DateLike],
    end: Optional[DateLike],
    group_by: Union[str, Sequence[str], None],
    filter: Optional[Mapping[str, Union[str, Sequence[str]]]],
) -> Op[GpuUsageBreakdown]:
    params = {**_period(start, end), "group_by": _csv(group_by, "group_by"), "filter": _usage_filter(filter)}
    return call(
        cfg,
        "GET",
        "/v1/finops/gpu/usage",
        lambda d: GpuUsageBreakdown.from_json(as_object(d)),
        params=params,
        idempotent=True,
    )


#: What a FOCUS export may answer: the file (CSV or Parquet), or an error in the JSON envelope.
FOCUS_ACCEPT = "text/csv, application/vnd.apache.parquet, application/json"


def gpu_allocation_focus(
    cfg: ClientConfig, start: Optional[DateLike], end: Optional[DateLike], format: Optional[str]
) -> Op[bytes]:
    return call(
        cfg,
        "GET",
        "/v1/finops/gpu/allocation/focus",
        bytes,
        params={**_period(start, end), "format": format},
        idempotent=True,
        accept=FOCUS_ACCEPT,
        binary=True,
    )


def _period(start: Optional[DateLike], end: Optional[DateLike]) -> Dict[str, Optional[str]]:
    return {
        "from": None if start is None else format_date_param(start, "start"),
        "to": None if end is None else format_date_param(end, "end"),
    }


def gpu_token_costs(
    cfg: ClientConfig,
    start: Optional[DateLike],
    end: Optional[DateLike],
    basis: Optional[str],
    aggregate: Optional[str],
) -> Op[TokenCostList]:
    params = {**_period(start, end), "basis": basis, "aggregate": aggregate}
    return call(
        cfg,
        "GET",
        "/v1/finops/gpu/token-costs",
        lambda d: TokenCostList.from_json(as_object(d)),
        params=params,
        idempotent=True,
    )


def gpu_allocation_series(
    cfg: ClientConfig, start: Optional[DateLike], end: Optional[DateLike], step: Optional[str]
) -> Op[AllocationSeries]:
    params = {**_period(start, end), "step": step}
    return call(
        cfg,
        "GET",
        "/v1/finops/gpu/allocation/series",
        lambda d: AllocationSeries.from_json(as_object(d)),
        params=params,
        idempotent=True,
    )


#: A ``sacct --json`` document: its parsed JSON (a mapping), or its text (``str``/``bytes``, sent as it is).
SacctDocument = Union[Mapping[str, Any], str, bytes]
#: A decimal parameter: ``Decimal``, ``int``, ``float`` (its shortest repr) or a decimal string.
DecimalLike = Union[Decimal, int, float, str]


def _decimal_param(value: Optional[DecimalLike], name: str) -> Optional[str]:
    """A decimal query parameter's text (``None``: left out); whether it is in range is the server's call."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a decimal, not a boolean")
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return decimal_text(Decimal(repr(value)))
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{name} must not be empty")
        return value
    raise TypeError(f"{name} must be a Decimal, an int, a float or a string, not {type(value).__name__}")


def _sacct_body(sacct: SacctDocument) -> Any:
    if isinstance(sacct, (bytes, bytearray, memoryview)):
        return RawJson(bytes(sacct))
    if isinstance(sacct, str):
        return RawJson(sacct.encode("utf-8"))
    if isinstance(sacct, os.PathLike):
        raise TypeError("sacct is the document, not its path: give Path(...).read_text() (or its json.load)")
    if isinstance(sacct, Mapping):
        return sacct
    raise TypeError(f"sacct must be a mapping, a str or bytes (sacct --json), not {type(sacct).__name__}")


def gpu_slurm_reconciliation(
    cfg: ClientConfig,
    sacct: SacctDocument,
    start: Optional[DateLike],
    end: Optional[DateLike],
    idle_below: Optional[DecimalLike],
) -> Op[SlurmReconciliation]:
    params = {**_period(start, end), "idle_below": _decimal_param(idle_below, "idle_below")}
    # A read: the body is the question, nothing is stored, so a retry is always safe.
    return call(
        cfg,
        "POST",
        "/v1/finops/gpu/slurm/reconciliation",
        lambda d: SlurmReconciliation.from_json(as_object(d)),
        params=params,
        body=_sacct_body(sacct),
        idempotent=True,
    )


def create_allocation_policy(
    cfg: ClientConfig, policy: Optional[Mapping[str, Any]], fields: Mapping[str, Any]
) -> Op[AllocationPolicyCreated]:
    body = _body(policy, fields, "policy")
    return call(
        cfg,
        "POST",
        POLICIES_PATH,
        lambda d: AllocationPolicyCreated.from_json(as_object(d)),
        body=body,
        idempotent=False,
    )


def list_allocation_policies(cfg: ClientConfig) -> Op[AllocationPolicyList]:
    return call(
        cfg,
        "GET",
        POLICIES_PATH,
        lambda d: AllocationPolicyList.from_json(as_object(d)),
        idempotent=True,
    )


def get_allocation_policy(cfg: ClientConfig, policy_id: str) -> Op[AllocationPolicy]:
    return call(
        cfg,
        "GET",
        f"{POLICIES_PATH}/{path_segment(policy_id)}",
        lambda d: AllocationPolicy.from_json(as_object(d)),
        idempotent=True,
    )


def supersede_allocation_policy(
    cfg: ClientConfig, policy_id: str, changes: Optional[Mapping[str, Any]], fields: Mapping[str, Any]
) -> Op[AllocationPolicyChange]:
    body = _body(changes, fields, "changes")
    return call(
        cfg,
        "POST",
        f"{POLICIES_PATH}/{path_segment(policy_id)}/supersede",
        lambda d: AllocationPolicyChange.from_json(as_object(d)),
        body=body,
        idempotent=False,
    )


def disable_allocation_policy(
    cfg: ClientConfig, policy_id: str, effective_at: Optional[DateLike]
) -> Op[AllocationPolicyChange]:
    body: Dict[str, Any] = {}
    if effective_at is not None:
        body["effective_at"] = format_date_param(effective_at, "effective_at")
    return call(
        cfg,
        "POST",
        f"{POLICIES_PATH}/{path_segment(policy_id)}/disable",
        lambda d: AllocationPolicyChange.from_json(as_object(d)),
        body=body,
        idempotent=False,
    )


# ------------------------------------------------------------------------------------ budgets, reservations


def _budget_body(body: Dict[str, Any]) -> Dict[str, Any]:
    """``limit`` as the contract's ``{"amount", "currency"}``: a mapping passes as it is, a :class:`Money`
    becomes one, a bare amount takes the ``currency`` keyword (which is not a field of the contract)."""
    currency = body.pop("currency", None)
    limit = body.get("limit")
    if isinstance(limit, Money):
        body["limit"] = {"amount": limit.amount, "currency": limit.currency}
    elif limit is not None and not isinstance(limit, Mapping):
        if currency is None:
            raise TypeError("a bare limit amount needs currency= (or give limit={'amount', 'currency'})")
        body["limit"] = {"amount": limit, "currency": currency}
    elif currency is not None:
        raise TypeError("currency= goes with a bare limit amount; put it in limit={'amount', 'currency'}")
    for key in ("effective_from", "effective_to", "effective_at"):
        if body.get(key) is not None and not isinstance(body[key], str):
            body[key] = format_date_param(body[key], key)
    return body


def create_budget(
    cfg: ClientConfig, budget: Optional[Mapping[str, Any]], fields: Mapping[str, Any]
) -> Op[Budget]:
    body = _budget_body(_body(budget, fields, "budget"))
    return call(
        cfg, "POST", BUDGETS_PATH, lambda d: Budget.from_json(as_object(d)), body=body, idempotent=False
    )


def list_budgets(cfg: ClientConfig) -> Op[BudgetList]:
    return call(cfg, "GET", BUDGETS_PATH, lambda d: BudgetList.from_json(as_object(d)), idempotent=True)


def get_budget(cfg: ClientConfig, budget_id: str) -> Op[Budget]:
    return call(
        cfg,
        "GET",
        f"{BUDGETS_PATH}/{path_segment(budget_id)}",
        lambda d: Budget.from_json(as_object(d)),
        idempotent=True,
    )


def supersede_budget(
    cfg: ClientConfig, budget_id: str, changes: Optional[Mapping[str, Any]], fields: Mapping[str, Any]
) -> Op[BudgetChange]:
    body = _budget_body(_body(changes, fields, "changes"))
    return call(
        cfg,
        "POST",
        f"{BUDGETS_PATH}/{path_segment(budget_id)}/supersede",
        lambda d: BudgetChange.from_json(as_object(d)),
        body=body,
        idempotent=False,
    )


def disable_budget(cfg: ClientConfig, budget_id: str, effective_at: Optional[DateLike]) -> Op[BudgetChange]:
    body: Dict[str, Any] = {}
    if effective_at is not None:
        body["effective_at"] = format_date_param(effective_at, "effective_at")
    return call(
        cfg,
        "POST",
        f"{BUDGETS_PATH}/{path_segment(budget_id)}/disable",
        lambda d: BudgetChange.from_json(as_object(d)),
        body=body,
        idempotent=False,
    )


def _amounts(
    given: Optional[Mapping[str, Any]], cost: Any, tokens: Any, currency: Optional[str], what: str
) -> Dict[str, Any]:
    out: Dict[str, Any] = dict(_body(given, {}, what))
    if cost is not None:
        out["cost"] = cost
    if tokens is not None:
        out["tokens"] = tokens
    if currency is not None:
        out["currency"] = currency
    if "cost" not in out:
        raise TypeError(f"the {what} needs a cost (cost= or {what}={{'cost': ...}})")
    return out


def reserve(
    cfg: ClientConfig,
    action: str,
    estimate: Dict[str, Any],
    deployment_id: Optional[str],
    ttl_seconds: Optional[int],
    tenant_id: Optional[str],
) -> Op[Reservation]:
    body: Dict[str, Any] = {"action": action, "estimate": estimate}
    if deployment_id is not None:
        body["deployment_id"] = deployment_id
    if ttl_seconds is not None:
        body["ttl_seconds"] = int(ttl_seconds)
    if tenant_id is not None:
        body["tenant_id"] = tenant_id
    # Not idempotent: a retry after an unclear failure could hold twice.
    return call(
        cfg,
        "POST",
        RESERVATIONS_PATH,
        lambda d: Reservation.from_json(as_object(d)),
        body=body,
        idempotent=False,
    )


def get_reservation(cfg: ClientConfig, reservation_id: str) -> Op[Reservation]:
    return call(
        cfg,
        "GET",
        f"{RESERVATIONS_PATH}/{path_segment(reservation_id)}",
        lambda d: Reservation.from_json(as_object(d)),
        idempotent=True,
    )


def commit_reservation(cfg: ClientConfig, reservation_id: str, actual: Dict[str, Any]) -> Op[Reservation]:
    # Idempotent on the server: a committed reservation is answered as it is.
    return call(
        cfg,
        "POST",
        f"{RESERVATIONS_PATH}/{path_segment(reservation_id)}/commit",
        lambda d: Reservation.from_json(as_object(d)),
        body={"actual": actual},
        idempotent=True,
    )


def release_reservation(cfg: ClientConfig, reservation_id: str) -> Op[Reservation]:
    # Idempotent on the server: a released (or expired) reservation is answered as it is.
    return call(
        cfg,
        "POST",
        f"{RESERVATIONS_PATH}/{path_segment(reservation_id)}/release",
        lambda d: Reservation.from_json(as_object(d)),
        idempotent=True,
    )


# --------------------------------------------------------------------------------------------- providers


def catalog(cfg: ClientConfig) -> Op[Catalog]:
    return call(
        cfg, "GET", "/v1/providers/catalog", lambda d: Catalog.from_json(as_object(d)), idempotent=True
    )


def register_provider(
    cfg: ClientConfig,
    deployment_id: str,
    base_url: str,
    label: Optional[str],
    enabled: Optional[bool],
    verify: Optional[bool],
) -> Op[Provider]:
    body: Dict[str, Any] = {"deployment_id": deployment_id, "base_url": base_url}
    for name, value in (("label", label), ("enabled", enabled), ("verify", verify)):
        if value is not None:
            body[name] = value
    # Idempotent on the server: a new registration of a deployment replaces the previous one.
    return call(
        cfg, "POST", "/v1/providers", lambda d: Provider.from_json(as_object(d)), body=body, idempotent=True
    )


# ------------------------------------------------------------------------------------------------- usage


def usage_events(
    cfg: ClientConfig,
    events: Iterable[Mapping[str, Any]],
    *,
    batch_size: Optional[int],
    split_on_payload_too_large: Optional[bool],
) -> Op[UsageIngestResult]:
    records = prepare_events(events)
    ids = [str(r["event_id"]) for r in records]

    def finish(totals: Dict[str, Any], requests: int) -> UsageIngestResult:
        return UsageIngestResult(
            accepted=split_count(totals, "accepted"), requests=requests, event_ids=ids, raw=totals
        )

    return ingest(
        cfg,
        EVENTS_PATH,
        "events",
        records,
        finish,
        batch_size=batch_size,
        split_on_payload_too_large=split_on_payload_too_large,
    )


# ----------------------------------------------------------------------------------------------- tenants


def create_tenant(cfg: ClientConfig, slug: str, name: str, tenant_id: Optional[str]) -> Op[Tenant]:
    body: Dict[str, Any] = {"slug": slug, "name": name}
    if tenant_id is not None:
        body["id"] = tenant_id
    return call(
        cfg, "POST", "/v1/tenants", lambda d: Tenant.from_json(as_object(d)), body=body, idempotent=False
    )


def list_tenants(cfg: ClientConfig) -> Op[TenantList]:
    return call(cfg, "GET", "/v1/tenants", lambda d: TenantList.from_json(as_object(d)), idempotent=True)


def get_tenant(cfg: ClientConfig, key: str) -> Op[Tenant]:
    return call(
        cfg,
        "GET",
        f"/v1/tenants/{path_segment(key)}",
        lambda d: Tenant.from_json(as_object(d)),
        idempotent=True,
    )


# -------------------------------------------------------------------------------------------------- auth


def whoami(cfg: ClientConfig) -> Op[WhoAmI]:
    return call(cfg, "GET", "/v1/auth/whoami", lambda d: WhoAmI.from_json(as_object(d)), idempotent=True)


def create_api_key(
    cfg: ClientConfig,
    role: str,
    tenant_id: Optional[str],
    name: Optional[str],
    expires_at: Optional[DateLike],
    nodes: Optional[Sequence[str]],
) -> Op[ApiKeyCreated]:
    body: Dict[str, Any] = {"role": role}
    if tenant_id is not None:
        body["tenant_id"] = tenant_id
    if name is not None:
        body["name"] = name
    if expires_at is not None:
        body["expires_at"] = format_date_param(expires_at, "expires_at")
    if nodes is not None:
        if isinstance(nodes, str):
            raise TypeError("nodes must be a list of node names, not a string")
        body["nodes"] = list(nodes)
    return call(
        cfg,
        "POST",
        "/v1/auth/api-keys",
        lambda d: ApiKeyCreated.from_json(as_object(d)),
        body=body,
        idempotent=False,
    )


def list_api_keys(cfg: ClientConfig) -> Op[ApiKeyList]:
    return call(
        cfg, "GET", "/v1/auth/api-keys", lambda d: ApiKeyList.from_json(as_object(d)), idempotent=True
    )


def revoke_api_key(cfg: ClientConfig, key_id: str) -> Op[ApiKey]:
    return call(
        cfg,
        "DELETE",
        f"/v1/auth/api-keys/{path_segment(key_id)}",
        lambda d: ApiKey.from_json(as_object(d)),
        idempotent=True,
    )


def rotate_api_key(cfg: ClientConfig, key_id: str, grace_seconds: Optional[int]) -> Op[ApiKeyCreated]:
    body: Dict[str, Any] = {}
    if grace_seconds is not None:
        body["grace_seconds"] = int(grace_seconds)
    return call(
        cfg,
        "POST",
        f"/v1/auth/api-keys/{path_segment(key_id)}/rotate",
        lambda d: ApiKeyCreated.from_json(as_object(d)),
        body=body,
        idempotent=False,
    )


# ------------------------------------------------------------------------------------------------- audit


def audit_events(cfg: ClientConfig, after: Optional[int], limit: Optional[int]) -> Op[AuditEventList]:
    params = {
        "after": None if after is None else str(int(after)),
        "limit": None if limit is None else str(int(limit)),
    }
    return call(
        cfg,
        "GET",
        "/v1/audit/events",
        lambda d: AuditEventList.from_json(as_object(d)),
        params=params,
        idempotent=True,
    )


def audit_head(cfg: ClientConfig) -> Op[AuditHead]:
    return call(cfg, "GET", "/v1/audit/head", lambda d: AuditHead.from_json(as_object(d)), idempotent=True)
