"""Every endpoint of the API as an operation (see :mod:`enterprise_ai._core`), shared by the sync and the
async resources: the paths, parameters, bodies, idempotency and result types live here only."""

from __future__ import annotations

import datetime as _dt
import os
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, TypeVar, Union

from ._core import (
    NO_BODY,
    ClientConfig,
    Op,
    RawJson,
    as_object,
    call,
    ingest,
    prepare_events,
    prepare_samples,
    split_count,
)
from ._json import DateLike, JsonValue, decimal_text, format_date_param
from ._registry import ENDPOINTS
from .types import (
    Allocation,
    AllocationExplanation,
    AllocationPolicy,
    AllocationPolicyChange,
    AllocationPolicyCreated,
    AllocationPolicyList,
    AllocationSeries,
    AnomalyList,
    ApiKey,
    ApiKeyCreated,
    ApiKeyList,
    AuditEventList,
    AuditHead,
    Budget,
    BudgetChange,
    BudgetList,
    Catalog,
    Forecast,
    GpuUsageBreakdown,
    Money,
    Provider,
    RecommendationList,
    Reservation,
    SampleIngestResult,
    SlurmReconciliation,
    Statement,
    StatementIssued,
    StatementList,
    Tenant,
    TenantList,
    TokenCostList,
    UsageIngestResult,
    WhoAmI,
)

T = TypeVar("T")


def _call(
    cfg: ClientConfig,
    operation_id: str,
    path_params: Optional[Mapping[str, str]],
    parse: Callable[[Any], T],
    **options: Any,
) -> Op[T]:
    """:func:`~enterprise_ai._core.call` of one operation of :data:`~enterprise_ai._registry.ENDPOINTS`."""
    endpoint = ENDPOINTS[operation_id]
    return call(cfg, endpoint.method, endpoint.expand(path_params), parse, **options)


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
        ENDPOINTS["ingestGpuSamples"].path,
        "samples",
        records,
        finish,
        batch_size=batch_size,
        split_on_payload_too_large=split_on_payload_too_large,
    )


def gpu_allocation(cfg: ClientConfig, start: Optional[DateLike], end: Optional[DateLike]) -> Op[Allocation]:
    return _call(
        cfg,
        "getGpuAllocation",
        None,
        lambda d: Allocation.from_json(as_object(d)),
        params=_period(start, end),
    )


def gpu_allocation_explain(
    cfg: ClientConfig,
    deployment_id: str,
    start: Optional[DateLike],
    end: Optional[DateLike],
    tenant_id: Optional[str],
) -> Op[AllocationExplanation]:
    return _call(
        cfg,
        "explainGpuAllocation",
        None,
        lambda d: AllocationExplanation.from_json(as_object(d)),
        params={**_period(start, end), "deployment_id": deployment_id, "tenant_id": tenant_id},
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
    return _call(
        cfg,
        "getGpuUsageBreakdown",
        None,
        lambda d: GpuUsageBreakdown.from_json(as_object(d)),
        params=params,
    )


#: What a FOCUS export may answer: the file (CSV or Parquet), or an error in the JSON envelope.
FOCUS_ACCEPT = "text/csv, application/vnd.apache.parquet, application/json"


def gpu_allocation_focus(
    cfg: ClientConfig,
    start: Optional[DateLike],
    end: Optional[DateLike],
    format: Optional[str],
    version: Optional[str],
    granularity: Optional[str],
) -> Op[bytes]:
    params = {**_period(start, end), "format": format, "version": version, "granularity": granularity}
    return _call(
        cfg,
        "getGpuAllocationFocus",
        None,
        bytes,
        params=params,
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
    return _call(
        cfg,
        "getGpuTokenCosts",
        None,
        lambda d: TokenCostList.from_json(as_object(d)),
        params=params,
    )


def gpu_allocation_series(
    cfg: ClientConfig, start: Optional[DateLike], end: Optional[DateLike], step: Optional[str]
) -> Op[AllocationSeries]:
    params = {**_period(start, end), "step": step}
    return _call(
        cfg,
        "getGpuAllocationSeries",
        None,
        lambda d: AllocationSeries.from_json(as_object(d)),
        params=params,
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
    return _call(
        cfg,
        "reconcileSlurmJobs",
        None,
        lambda d: SlurmReconciliation.from_json(as_object(d)),
        params=params,
        body=_sacct_body(sacct),
    )


def gpu_recommendations(
    cfg: ClientConfig,
    start: Optional[DateLike],
    end: Optional[DateLike],
    idle_utilization: Optional[DecimalLike],
    idle_share: Optional[DecimalLike],
    low_utilization: Optional[DecimalLike],
) -> Op[RecommendationList]:
    params = {
        **_period(start, end),
        "idle_utilization": _decimal_param(idle_utilization, "idle_utilization"),
        "idle_share": _decimal_param(idle_share, "idle_share"),
        "low_utilization": _decimal_param(low_utilization, "low_utilization"),
    }
    return _call(
        cfg,
        "getGpuRecommendations",
        None,
        lambda d: RecommendationList.from_json(as_object(d)),
        params=params,
    )


#: A forecast's month: ``"YYYY-MM"``, or a ``date``/``datetime`` (its year and month).
MonthLike = Union[str, _dt.date]


def _month_param(period: Optional[MonthLike]) -> Optional[str]:
    """The ``period`` query parameter's text (``None``: left out, the server's current month)."""
    if period is None:
        return None
    if isinstance(period, _dt.date):  # a datetime is a date too
        return f"{period.year:04d}-{period.month:02d}"
    if isinstance(period, str):
        if not period:
            raise ValueError("period must not be empty")
        return period
    raise TypeError(f"period must be a 'YYYY-MM' string or a date, not {type(period).__name__}")


def gpu_forecast(cfg: ClientConfig, period: Optional[MonthLike]) -> Op[Forecast]:
    return _call(
        cfg,
        "getGpuForecast",
        None,
        lambda d: Forecast.from_json(as_object(d)),
        params={"period": _month_param(period)},
    )


def gpu_anomalies(cfg: ClientConfig, start: Optional[DateLike], end: Optional[DateLike]) -> Op[AnomalyList]:
    return _call(
        cfg,
        "listGpuAnomalies",
        None,
        lambda d: AnomalyList.from_json(as_object(d)),
        params=_period(start, end),
    )


def gpu_statements(
    cfg: ClientConfig, period: Optional[MonthLike], tenant_id: Optional[str]
) -> Op[StatementList]:
    return _call(
        cfg,
        "listGpuStatements",
        None,
        lambda d: StatementList.from_json(as_object(d)),
        params={"period": _month_param(period), "tenant_id": tenant_id},
    )


def issue_gpu_statements(
    cfg: ClientConfig, period: MonthLike, tenant_id: Optional[str], idempotency_key: Optional[str]
) -> Op[StatementIssued]:
    month = _month_param(period)
    if month is None:
        raise TypeError("period is required: the month to issue, 'YYYY-MM' or a date")
    body: Dict[str, Any] = {"period": month}
    if tenant_id is not None:
        body["tenant_id"] = tenant_id
    # A creation, but one that never happens twice: a statement already issued comes back under
    # already_issued, and the Idempotency-Key (the same on each retry) gives a retry the first answer.
    return _call(
        cfg,
        "issueGpuStatements",
        None,
        lambda d: StatementIssued.from_json(as_object(d)),
        body=body,
        idempotency_key=idempotency_key,
    )


def gpu_statement(cfg: ClientConfig, number: str) -> Op[Statement]:
    return _call(
        cfg,
        "getGpuStatement",
        {"number": number},
        lambda d: Statement.from_json(as_object(d)),
    )


#: What a statement's CSV may answer: the file, or an error in the JSON envelope.
STATEMENT_CSV_ACCEPT = "text/csv, application/json"


def gpu_statement_csv(cfg: ClientConfig, number: str) -> Op[str]:
    return _call(
        cfg,
        "getGpuStatement",
        {"number": number},
        lambda b: bytes(b).decode("utf-8"),
        params={"format": "csv"},
        accept=STATEMENT_CSV_ACCEPT,
        binary=True,
    )


def create_allocation_policy(
    cfg: ClientConfig, policy: Optional[Mapping[str, Any]], fields: Mapping[str, Any]
) -> Op[AllocationPolicyCreated]:
    body = _body(policy, fields, "policy")
    return _call(
        cfg,
        "createAllocationPolicy",
        None,
        lambda d: AllocationPolicyCreated.from_json(as_object(d)),
        body=body,
    )


def list_allocation_policies(cfg: ClientConfig) -> Op[AllocationPolicyList]:
    return _call(
        cfg,
        "listAllocationPolicies",
        None,
        lambda d: AllocationPolicyList.from_json(as_object(d)),
    )


def get_allocation_policy(cfg: ClientConfig, policy_id: str) -> Op[AllocationPolicy]:
    return _call(
        cfg,
        "getAllocationPolicy",
        {"id": policy_id},
        lambda d: AllocationPolicy.from_json(as_object(d)),
    )


def supersede_allocation_policy(
    cfg: ClientConfig, policy_id: str, changes: Optional[Mapping[str, Any]], fields: Mapping[str, Any]
) -> Op[AllocationPolicyChange]:
    body = _body(changes, fields, "changes")
    return _call(
        cfg,
        "supersedeAllocationPolicy",
        {"id": policy_id},
        lambda d: AllocationPolicyChange.from_json(as_object(d)),
        body=body,
    )


def disable_allocation_policy(
    cfg: ClientConfig, policy_id: str, effective_at: Optional[DateLike]
) -> Op[AllocationPolicyChange]:
    body: Dict[str, Any] = {}
    if effective_at is not None:
        body["effective_at"] = format_date_param(effective_at, "effective_at")
    return _call(
        cfg,
        "disableAllocationPolicy",
        {"id": policy_id},
        lambda d: AllocationPolicyChange.from_json(as_object(d)),
        body=body,
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
    return _call(
        cfg,
        "createBudget",
        None,
        lambda d: Budget.from_json(as_object(d)),
        body=body,
    )


def list_budgets(cfg: ClientConfig) -> Op[BudgetList]:
    return _call(cfg, "listBudgets", None, lambda d: BudgetList.from_json(as_object(d)))


def get_budget(cfg: ClientConfig, budget_id: str) -> Op[Budget]:
    return _call(
        cfg,
        "getBudget",
        {"id": budget_id},
        lambda d: Budget.from_json(as_object(d)),
    )


def supersede_budget(
    cfg: ClientConfig, budget_id: str, changes: Optional[Mapping[str, Any]], fields: Mapping[str, Any]
) -> Op[BudgetChange]:
    body = _budget_body(_body(changes, fields, "changes"))
    return _call(
        cfg,
        "supersedeBudget",
        {"id": budget_id},
        lambda d: BudgetChange.from_json(as_object(d)),
        body=body,
    )


def disable_budget(cfg: ClientConfig, budget_id: str, effective_at: Optional[DateLike]) -> Op[BudgetChange]:
    body: Dict[str, Any] = {}
    if effective_at is not None:
        body["effective_at"] = format_date_param(effective_at, "effective_at")
    return _call(
        cfg,
        "disableBudget",
        {"id": budget_id},
        lambda d: BudgetChange.from_json(as_object(d)),
        body=body,
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
    # A creation: its Idempotency-Key (the same on each retry) keeps a retry from holding twice.
    return _call(
        cfg,
        "createReservation",
        None,
        lambda d: Reservation.from_json(as_object(d)),
        body=body,
    )


def get_reservation(cfg: ClientConfig, reservation_id: str) -> Op[Reservation]:
    return _call(
        cfg,
        "getReservation",
        {"id": reservation_id},
        lambda d: Reservation.from_json(as_object(d)),
    )


def commit_reservation(cfg: ClientConfig, reservation_id: str, actual: Dict[str, Any]) -> Op[Reservation]:
    # Idempotent on the server: a committed reservation is answered as it is.
    return _call(
        cfg,
        "commitReservation",
        {"id": reservation_id},
        lambda d: Reservation.from_json(as_object(d)),
        body={"actual": actual},
    )


def release_reservation(cfg: ClientConfig, reservation_id: str) -> Op[Reservation]:
    # Idempotent on the server: a released (or expired) reservation is answered as it is.
    return _call(
        cfg,
        "releaseReservation",
        {"id": reservation_id},
        lambda d: Reservation.from_json(as_object(d)),
    )


# --------------------------------------------------------------------------------------------- providers


def catalog(cfg: ClientConfig) -> Op[Catalog]:
    return _call(
        cfg,
        "getProvidersCatalog",
        None,
        lambda d: Catalog.from_json(as_object(d)),
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
    return _call(
        cfg,
        "registerProvider",
        None,
        lambda d: Provider.from_json(as_object(d)),
        body=body,
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
        ENDPOINTS["ingestUsageEvents"].path,
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
    return _call(
        cfg,
        "createTenant",
        None,
        lambda d: Tenant.from_json(as_object(d)),
        body=body,
    )


def list_tenants(cfg: ClientConfig) -> Op[TenantList]:
    return _call(cfg, "listTenants", None, lambda d: TenantList.from_json(as_object(d)))


def get_tenant(cfg: ClientConfig, key: str) -> Op[Tenant]:
    return _call(
        cfg,
        "getTenant",
        {"key": key},
        lambda d: Tenant.from_json(as_object(d)),
    )


# -------------------------------------------------------------------------------------------------- auth


def whoami(cfg: ClientConfig) -> Op[WhoAmI]:
    return _call(cfg, "whoAmI", None, lambda d: WhoAmI.from_json(as_object(d)))


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
    return _call(
        cfg,
        "createApiKey",
        None,
        lambda d: ApiKeyCreated.from_json(as_object(d)),
        body=body,
    )


def list_api_keys(cfg: ClientConfig) -> Op[ApiKeyList]:
    return _call(
        cfg,
        "listApiKeys",
        None,
        lambda d: ApiKeyList.from_json(as_object(d)),
    )


def revoke_api_key(cfg: ClientConfig, key_id: str) -> Op[ApiKey]:
    return _call(
        cfg,
        "revokeApiKey",
        {"id": key_id},
        lambda d: ApiKey.from_json(as_object(d)),
    )


def rotate_api_key(cfg: ClientConfig, key_id: str, grace_seconds: Optional[int]) -> Op[ApiKeyCreated]:
    body: Dict[str, Any] = {}
    if grace_seconds is not None:
        body["grace_seconds"] = int(grace_seconds)
    return _call(
        cfg,
        "rotateApiKey",
        {"id": key_id},
        lambda d: ApiKeyCreated.from_json(as_object(d)),
        body=body,
    )


# ------------------------------------------------------------------------------------------------- audit


def audit_events(cfg: ClientConfig, after: Optional[int], limit: Optional[int]) -> Op[AuditEventList]:
    params = {
        "after": None if after is None else str(int(after)),
        "limit": None if limit is None else str(int(limit)),
    }
    return _call(
        cfg,
        "listAuditEvents",
        None,
        lambda d: AuditEventList.from_json(as_object(d)),
        params=params,
    )


def audit_head(cfg: ClientConfig) -> Op[AuditHead]:
    return _call(cfg, "getAuditHead", None, lambda d: AuditHead.from_json(as_object(d)))


# ------------------------------------------------------------------------------------- service, raw calls


def healthz(cfg: ClientConfig) -> Op[JsonValue]:
    return _call(cfg, "healthz", None, lambda d: d)


def readyz(cfg: ClientConfig) -> Op[JsonValue]:
    return _call(cfg, "readyz", None, lambda d: d)


def metrics(cfg: ClientConfig) -> Op[str]:
    return _call(cfg, "metrics", None, lambda b: bytes(b).decode("utf-8"), accept="text/plain", binary=True)


def openapi(cfg: ClientConfig) -> Op[JsonValue]:
    return _call(cfg, "openapi", None, lambda d: d)


def raw_request(
    cfg: ClientConfig,
    method: str,
    path: str,
    params: Optional[Mapping[str, Optional[str]]],
    json: Any,
    idempotency_key: Optional[str],
) -> Op[JsonValue]:
    """Any call (the escape hatch): ``path`` is the API's (``/v1/...``), ``json`` the body or ``None``."""
    if not path.startswith("/"):
        raise ValueError(f"path must start with '/' (got {path!r})")
    return call(
        cfg,
        method.upper(),
        path,
        lambda d: d,
        params=params,
        body=NO_BODY if json is None else json,
        idempotency_key=idempotency_key,
    )
