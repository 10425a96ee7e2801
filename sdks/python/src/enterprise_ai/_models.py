"""The API's models, GENERATED from contracts/v1/openapi.json by codegen/generate.py: do not edit.

Regenerate with ``python3 sdks/python/codegen/generate.py``; ``sdks/python/test.sh`` fails when this file is
stale. Answers are frozen dataclasses (``from_json``; ``raw`` keeps the JSON object as sent, unknown fields
included); request bodies are ``TypedDict``s. Money and quantities are ``Decimal``, never ``float``; instants
are timezone-aware ``datetime``s.
"""

# ruff: noqa: E501

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Dict, List, Mapping, Optional, TypedDict, Union

from . import _model_helpers as _h
from ._model_runtime import (
    ItemList,
    Model,
    Result,
    p_bool,
    p_date,
    p_dec,
    p_instant,
    p_int,
    p_list,
    p_obj,
    p_opt,
    p_raw,
    p_str,
)

__all__ = [
    "Allocation",
    "AllocationDaily",
    "AllocationDeployment",
    "AllocationExplanation",
    "AllocationFinding",
    "AllocationGap",
    "AllocationItem",
    "AllocationPolicy",
    "AllocationPolicyChange",
    "AllocationPolicyCreate",
    "AllocationPolicyCreated",
    "AllocationPolicyDisable",
    "AllocationPolicyList",
    "AllocationPolicySupersede",
    "AllocationSeries",
    "AllocationTenant",
    "Anomaly",
    "AnomalyList",
    "ApiKey",
    "ApiKeyCreate",
    "ApiKeyCreated",
    "ApiKeyList",
    "ApiKeyRotate",
    "AuditEvent",
    "AuditEventList",
    "AuditHead",
    "Budget",
    "BudgetChange",
    "BudgetCreate",
    "BudgetCurrent",
    "BudgetDisable",
    "BudgetForecast",
    "BudgetList",
    "BudgetSupersede",
    "Catalog",
    "ExplanationBucket",
    "ExplanationClaim",
    "ExplanationIdleShare",
    "ExplanationIdleSpread",
    "ExplanationParty",
    "ExplanationPartyCost",
    "ExplanationPolicy",
    "ExplanationPriced",
    "ExplanationRounding",
    "ExplanationRoundingLine",
    "Forecast",
    "ForecastLine",
    "ForecastTotal",
    "GpuSample",
    "GpuSampleBatch",
    "GpuSampleIngestResult",
    "GpuUsageBreakdown",
    "GpuUsageRow",
    "Health",
    "IdleGpu",
    "Money",
    "MoneyInput",
    "Provider",
    "ProviderCreate",
    "ProviderPricing",
    "Ready",
    "Recommendation",
    "RecommendationEvidence",
    "RecommendationList",
    "RecommendationThresholds",
    "Reservation",
    "ReservationAmounts",
    "ReservationCommit",
    "ReservationCommitActualInput",
    "ReservationCreate",
    "ReservationCreateEstimateInput",
    "SacctDocument",
    "SacctDocumentJobsInput",
    "SeriesDeployment",
    "SeriesStep",
    "SeriesTotal",
    "SlurmJobLine",
    "SlurmReconciliation",
    "Statement",
    "StatementIssue",
    "StatementIssued",
    "StatementLine",
    "StatementList",
    "StatementSummary",
    "Tenant",
    "TenantCreate",
    "TenantList",
    "TenantRef",
    "TokenCost",
    "TokenCostList",
    "UsageEvent",
    "UsageEventBatch",
    "UsageEventCostInput",
    "UsageEventIngestResult",
    "UsageEventModelInput",
    "WhoAmI",
]


@dataclass(frozen=True)
class AuditEvent(Model):
    """One link of the audit hash chain (SPEC §4): every mutation and every authorization decision on a mutation. hash = sha256(prev_hash || canonical(event without seq, prev_hash and hash) || seq), lowercase hex; the first event's prev_hash is 64 zeros. Served by GET /v1/audit/events and verified by `eai-gpu audit verify`."""

    seq: int
    """Position in the chain, from 1, without holes."""
    occurred_at: _dt.datetime
    """When the decision was taken (UTC)."""
    actor: str
    """The API key id of the caller (`key_3`), or `system`; `anonymous` for a request without a valid key."""
    actor_role: Optional[str]
    """Role of the actor's key; null for `system` or an unknown caller."""
    tenant_id: Optional[str]
    """The tenant the event concerns: the actor key's, the tenant a platform key acted for with X-EAI-Tenant, or a budget's (threshold crossings); null: the platform."""
    action: str
    """What was attempted, e.g. `allocation_policy.create`, `allocation_policy.supersede`, `api_key.create`, `gpu_samples.ingest`, `usage_events.ingest`."""
    decision: str
    resource: Optional[str]
    """What it applied to (`alp_1`, `key_5`), when there is one."""
    request_id: Optional[str]
    """X-Request-Id of the HTTP request; null for a CLI action."""
    details: Dict[str, Any]
    """Facts of the event (never a secret: no key text)."""
    prev_hash: str
    """hash of the previous event (64 zeros for seq 1)."""
    hash: str
    """sha256 of this link, lowercase hex."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AuditEvent:
        return cls(
            seq=p_int(d["seq"]),
            occurred_at=p_instant(d["occurred_at"]),
            actor=p_str(d["actor"]),
            actor_role=p_opt(d["actor_role"], p_str),
            tenant_id=p_opt(d["tenant_id"], p_str),
            action=p_str(d["action"]),
            decision=p_str(d["decision"]),
            resource=p_opt(d["resource"], p_str),
            request_id=p_opt(d["request_id"], p_str),
            details=dict(p_obj(d["details"])),
            prev_hash=p_str(d["prev_hash"]),
            hash=p_str(d["hash"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Money(_h.MoneyHelpers, Model):
    """An amount rounded to the currency's minor unit, e.g. {"amount": "412.70", "currency": "EUR"}."""

    amount: Decimal
    currency: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Money:
        return cls(
            amount=p_dec(d["amount"]),
            currency=p_str(d["currency"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class GpuSampleIngestResult(Result, Model):
    """``GpuSampleIngestResult`` of the contract."""

    accepted: int
    """Samples of the batch, re-sent duplicates included."""
    duplicates: int
    """Of those, samples already stored (same gpu_uuid and timestamp): counted once."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GpuSampleIngestResult:
        return cls(
            accepted=p_int(d["accepted"]),
            duplicates=p_int(d["duplicates"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class UsageEventIngestResult(Result, Model):
    """``UsageEventIngestResult`` of the contract."""

    accepted: int
    """Events of the batch (a re-sent event_id replaces the stored one)."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> UsageEventIngestResult:
        return cls(
            accepted=p_int(d["accepted"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationItem(Model):
    """What a tenant is charged for a deployment under one policy."""

    tenant_id: str
    deployment_id: str
    gpu_seconds: Decimal
    gpu_memory_gb_seconds: Decimal
    energy_wh: Decimal
    allocated: Money
    policy_id: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationItem:
        return cls(
            tenant_id=p_str(d["tenant_id"]),
            deployment_id=p_str(d["deployment_id"]),
            gpu_seconds=p_dec(d["gpu_seconds"]),
            gpu_memory_gb_seconds=p_dec(d["gpu_memory_gb_seconds"]),
            energy_wh=p_dec(d["energy_wh"]),
            allocated=Money.from_json(p_obj(d["allocated"])),
            policy_id=p_str(d["policy_id"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationDeployment(_h.AllocationDeploymentHelpers, Model):
    """One row per (deployment, currency). For every row, to the cent: allocated + unallocated = cost."""

    deployment_id: str
    dedicated: bool
    """Its samples carry an owner tenant: all of it goes to the owner."""
    samples: int
    """Samples received in the period."""
    estimated_samples: int
    """Windows filled by interpolation (short gaps)."""
    gpus: int
    """Distinct GPUs (or MIG slices) seen."""
    gpu_hours: Decimal
    busy_gpu_hours: Decimal
    estimated_gpu_seconds: Decimal
    gpu_memory_gb_seconds: Decimal
    energy_kwh: Decimal
    cost: Decimal
    allocated: Decimal
    unallocated: Decimal
    unpriced_samples: int
    """Samples no enabled policy prices (counted, never priced at zero)."""
    currency: Optional[str]
    """null when nothing of the deployment was priced."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationDeployment:
        return cls(
            deployment_id=p_str(d["deployment_id"]),
            dedicated=p_bool(d["dedicated"]),
            samples=p_int(d["samples"]),
            estimated_samples=p_int(d["estimated_samples"]),
            gpus=p_int(d["gpus"]),
            gpu_hours=p_dec(d["gpu_hours"]),
            busy_gpu_hours=p_dec(d["busy_gpu_hours"]),
            estimated_gpu_seconds=p_dec(d["estimated_gpu_seconds"]),
            gpu_memory_gb_seconds=p_dec(d["gpu_memory_gb_seconds"]),
            energy_kwh=p_dec(d["energy_kwh"]),
            cost=p_dec(d["cost"]),
            allocated=p_dec(d["allocated"]),
            unallocated=p_dec(d["unallocated"]),
            unpriced_samples=p_int(d["unpriced_samples"]),
            currency=p_opt(d["currency"], p_str),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationTenant(Model):
    """One row per (tenant, currency)."""

    tenant_id: str
    gpu_seconds: Decimal
    share: Decimal
    """The tenant's cost over the cost of every deployment in the view, in that currency (0..1, 4 places)."""
    cost: Money
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationTenant:
        return cls(
            tenant_id=p_str(d["tenant_id"]),
            gpu_seconds=p_dec(d["gpu_seconds"]),
            share=p_dec(d["share"]),
            cost=Money.from_json(p_obj(d["cost"])),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationDaily(Model):
    """Cost of a deployment on one UTC day (the days sum to the deployment's cost)."""

    date: _dt.date
    """UTC day."""
    deployment_id: str
    cost: Money
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationDaily:
        return cls(
            date=p_date(d["date"]),
            deployment_id=p_str(d["deployment_id"]),
            cost=Money.from_json(p_obj(d["cost"])),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationGap(Model):
    """A span of a GPU series with no sample that was not filled (longer than the interpolation limit, or the series changed across it)."""

    gpu_uuid: str
    node: str
    deployment_id: str
    from_: _dt.datetime
    to: _dt.datetime
    reason: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationGap:
        return cls(
            gpu_uuid=p_str(d["gpu_uuid"]),
            node=p_str(d["node"]),
            deployment_id=p_str(d["deployment_id"]),
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            reason=p_str(d["reason"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationFinding(Model):
    """Something the figures rest on that a FinOps reader should know."""

    code: str
    message: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationFinding:
        return cls(
            code=p_str(d["code"]),
            message=p_str(d["message"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Allocation(_h.AllocationHelpers, Result, Model):
    """The allocation of a period. Decimals are strings, counts are integers. A tenant-scoped caller sees only its own items, tenant row and share of each deployment."""

    period: str
    """`2026-10` when the period is exactly one calendar month, else `FROM/TO`."""
    from_: _dt.datetime
    """Start of the period (inclusive)."""
    to: _dt.datetime
    """End of the period (exclusive)."""
    items: List[AllocationItem]
    deployments: List[AllocationDeployment]
    tenants: List[AllocationTenant]
    daily: List[AllocationDaily]
    """Cost per day and deployment: the days of a row sum to its deployment's cost. In a tenant-scoped view (a tenant's key, or a platform key with X-EAI-Tenant) only the deployments dedicated to the tenant are listed: a shared deployment's daily total would reveal other tenants' usage (the tenant's share of shared deployments is in `items` and `tenants`)."""
    gaps: List[AllocationGap]
    findings: List[AllocationFinding]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Allocation:
        return cls(
            period=p_str(d["period"]),
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            items=p_list(d["items"], lambda v: AllocationItem.from_json(p_obj(v))),
            deployments=p_list(d["deployments"], lambda v: AllocationDeployment.from_json(p_obj(v))),
            tenants=p_list(d["tenants"], lambda v: AllocationTenant.from_json(p_obj(v))),
            daily=p_list(d["daily"], lambda v: AllocationDaily.from_json(p_obj(v))),
            gaps=p_list(d["gaps"], lambda v: AllocationGap.from_json(p_obj(v))),
            findings=p_list(d["findings"], lambda v: AllocationFinding.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationPolicy(Result, Model):
    """A stored allocation policy. Never edited in place: a change closes it (effective_to) and opens another."""

    id: str
    status: str
    """disabled: enabled is false; closed: effective_to has passed; scheduled: effective_from is in the future; active: in effect now."""
    name: str
    deployment_pattern: str
    gpu_model: Optional[str]
    currency: str
    gpu_hourly_cost: Decimal
    overhead_pct: Decimal
    energy_kwh_price: Decimal
    pue: Decimal
    storage_gb_month_price: Decimal
    idle_capacity: str
    output_token_weight: Decimal
    """What one output token weighs against one input token where prefill and decode time are not measured (cost per token)."""
    enabled: bool
    effective_from: _dt.datetime
    effective_to: Optional[_dt.datetime]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationPolicy:
        return cls(
            id=p_str(d["id"]),
            status=p_str(d["status"]),
            name=p_str(d["name"]),
            deployment_pattern=p_str(d["deployment_pattern"]),
            gpu_model=p_opt(d["gpu_model"], p_str),
            currency=p_str(d["currency"]),
            gpu_hourly_cost=p_dec(d["gpu_hourly_cost"]),
            overhead_pct=p_dec(d["overhead_pct"]),
            energy_kwh_price=p_dec(d["energy_kwh_price"]),
            pue=p_dec(d["pue"]),
            storage_gb_month_price=p_dec(d["storage_gb_month_price"]),
            idle_capacity=p_str(d["idle_capacity"]),
            output_token_weight=p_dec(d["output_token_weight"]),
            enabled=p_bool(d["enabled"]),
            effective_from=p_instant(d["effective_from"]),
            effective_to=p_opt(d["effective_to"], p_instant),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationPolicyCreated(Result, Model):
    """``AllocationPolicyCreated`` of the contract."""

    id: str
    status: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationPolicyCreated:
        return cls(
            id=p_str(d["id"]),
            status=p_str(d["status"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationPolicyList(_h.AllocationPolicyListHelpers, ItemList[AllocationPolicy], Result, Model):
    """Every policy, closed ones included, oldest first."""

    items: List[AllocationPolicy]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationPolicyList:
        return cls(
            items=p_list(d["items"], lambda v: AllocationPolicy.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationPolicyChange(Result, Model):
    """The policy as closed, and the policy opened in its place (same transaction)."""

    closed: AllocationPolicy
    opened: AllocationPolicy
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationPolicyChange:
        return cls(
            closed=AllocationPolicy.from_json(p_obj(d["closed"])),
            opened=AllocationPolicy.from_json(p_obj(d["opened"])),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ProviderPricing(Model):
    """What its tokens cost over the last closed UTC month (GET /v1/finops/gpu/token-costs of that month, per deployment, allocation basis: the deployment's whole cost, idle included); null when it served no token then. Cached for up to 10 minutes."""

    per_mtok: Optional[Decimal]
    """Cost per million tokens, input and output together."""
    input_per_mtok: Optional[Decimal]
    """Per million input tokens that needed compute."""
    output_per_mtok: Optional[Decimal]
    """Per million output tokens."""
    currency: str
    period: str
    basis: str
    allocation_method: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ProviderPricing:
        return cls(
            per_mtok=p_opt(d["per_mtok"], p_dec),
            input_per_mtok=p_opt(d["input_per_mtok"], p_dec),
            output_per_mtok=p_opt(d["output_per_mtok"], p_dec),
            currency=p_str(d["currency"]),
            period=p_str(d["period"]),
            basis=p_str(d["basis"]),
            allocation_method=p_str(d["allocation_method"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Provider(Result, Model):
    """``Provider`` of the contract."""

    id: str
    """Provider kind, e.g. `vllm`."""
    label: str
    """The registered label, else `vLLM (local inference engine)`."""
    local: bool
    """Runs on the platform's own GPUs."""
    base_url: str
    """OpenAI-compatible endpoint of the deployment: the registered one, else `http://<deployment_id>:8000/v1`."""
    provider_id: str
    """Stable id of this provider entry."""
    enabled: bool
    discovery: str
    """`api`: registered and confirmed by its model list (GET {base_url}/models); `config`: registered without confirmation; `samples`: only seen in GPU samples (base_url is the in-cluster URL its name gives)."""
    deployment_id: str
    """The deployment this provider serves."""
    model: Optional[str]
    """The model served: the first of `models`, else the one its tokens name; null when not known."""
    models: List[str]
    """The model ids its GET /models listed when it was confirmed (empty otherwise)."""
    pricing: Optional[ProviderPricing]
    """What its tokens cost over the last closed UTC month (GET /v1/finops/gpu/token-costs of that month, per deployment, allocation basis: the deployment's whole cost, idle included); null when it served no token then. Cached for up to 10 minutes."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Provider:
        return cls(
            id=p_str(d["id"]),
            label=p_str(d["label"]),
            local=p_bool(d["local"]),
            base_url=p_str(d["base_url"]),
            provider_id=p_str(d["provider_id"]),
            enabled=p_bool(d["enabled"]),
            discovery=p_str(d["discovery"]),
            deployment_id=p_str(d["deployment_id"]),
            model=p_opt(d["model"], p_str),
            models=p_list(d["models"], p_str),
            pricing=p_opt(d["pricing"], lambda v: ProviderPricing.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Catalog(_h.CatalogHelpers, ItemList[Provider], Result, Model):
    """``Catalog`` of the contract."""

    items: List[Provider]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Catalog:
        return cls(
            items=p_list(d["items"], lambda v: Provider.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ApiKeyCreated(Result, Model):
    """A key just made (or rotated): the secret is in this answer only."""

    id: str
    """Public id, safe to log."""
    role: str
    tenant_id: Optional[str]
    name: Optional[str]
    status: str
    created_at: _dt.datetime
    expires_at: Optional[_dt.datetime]
    revoked_at: Optional[_dt.datetime]
    rotated_at: Optional[_dt.datetime]
    previous_secret_valid_until: Optional[_dt.datetime]
    """After a rotation with a grace period: until when the previous secret still works."""
    nodes: Optional[List[str]]
    key: str = field(repr=False)
    """The secret: shown once, never again (only its hash is stored)."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ApiKeyCreated:
        return cls(
            id=p_str(d["id"]),
            role=p_str(d["role"]),
            tenant_id=p_opt(d["tenant_id"], p_str),
            name=p_opt(d["name"], p_str),
            status=p_str(d["status"]),
            created_at=p_instant(d["created_at"]),
            expires_at=p_opt(d["expires_at"], p_instant),
            revoked_at=p_opt(d["revoked_at"], p_instant),
            rotated_at=p_opt(d["rotated_at"], p_instant),
            previous_secret_valid_until=p_opt(d["previous_secret_valid_until"], p_instant),
            nodes=p_opt(d["nodes"], lambda v: p_list(v, p_str)),
            key=p_str(d["key"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class TenantRef(Model):
    """A tenant as whoami describes it: `slug` and `name` are null for a tenant only seen in data."""

    id: str
    slug: Optional[str]
    name: Optional[str]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TenantRef:
        return cls(
            id=p_str(d["id"]),
            slug=p_opt(d["slug"], p_str),
            name=p_opt(d["name"], p_str),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class WhoAmI(Result, Model):
    """The identity behind an API key (GET /v1/auth/whoami)."""

    key_id: str
    """Public id of the key, safe to log."""
    role: str
    tenant_id: Optional[str]
    tenant: Optional[TenantRef]
    """The key's tenant (null for platform identities)."""
    acting_tenant: Optional[TenantRef]
    """The tenant a platform key is signed in to with X-EAI-Tenant, else null."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> WhoAmI:
        return cls(
            key_id=p_str(d["key_id"]),
            role=p_str(d["role"]),
            tenant_id=p_opt(d["tenant_id"], p_str),
            tenant=p_opt(d["tenant"], lambda v: TenantRef.from_json(p_obj(v))),
            acting_tenant=p_opt(d["acting_tenant"], lambda v: TenantRef.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AuditEventList(_h.AuditEventListHelpers, ItemList[AuditEvent], Result, Model):
    """Events with seq > after, oldest first, at most limit (a tenant-scoped auditor sees its tenant's events)."""

    items: List[AuditEvent]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AuditEventList:
        return cls(
            items=p_list(d["items"], lambda v: AuditEvent.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Health(Result, Model):
    """``Health`` of the contract."""

    status: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Health:
        return cls(
            status=p_str(d["status"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Ready(Result, Model):
    """``Ready`` of the contract."""

    status: str
    storage: str
    """Storage backend (`sqlite`, `postgres`)."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Ready:
        return cls(
            status=p_str(d["status"]),
            storage=p_str(d["storage"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ApiKey(Result, Model):
    """An API key as listed: never its secret nor its hash."""

    id: str
    """Public id, safe to log."""
    role: str
    tenant_id: Optional[str]
    name: Optional[str]
    status: str
    created_at: _dt.datetime
    expires_at: Optional[_dt.datetime]
    revoked_at: Optional[_dt.datetime]
    rotated_at: Optional[_dt.datetime]
    previous_secret_valid_until: Optional[_dt.datetime]
    """After a rotation with a grace period: until when the previous secret still works."""
    nodes: Optional[List[str]]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ApiKey:
        return cls(
            id=p_str(d["id"]),
            role=p_str(d["role"]),
            tenant_id=p_opt(d["tenant_id"], p_str),
            name=p_opt(d["name"], p_str),
            status=p_str(d["status"]),
            created_at=p_instant(d["created_at"]),
            expires_at=p_opt(d["expires_at"], p_instant),
            revoked_at=p_opt(d["revoked_at"], p_instant),
            rotated_at=p_opt(d["rotated_at"], p_instant),
            previous_secret_valid_until=p_opt(d["previous_secret_valid_until"], p_instant),
            nodes=p_opt(d["nodes"], lambda v: p_list(v, p_str)),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ApiKeyList(_h.ApiKeyListHelpers, ItemList[ApiKey], Result, Model):
    """``ApiKeyList`` of the contract."""

    items: List[ApiKey]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ApiKeyList:
        return cls(
            items=p_list(d["items"], lambda v: ApiKey.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AuditHead(Result, Model):
    """The audit chain's newest event: anchor it outside the database (`eai-gpu audit verify --expect-head SEQ:HASH`)."""

    seq: int
    hash: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AuditHead:
        return cls(
            seq=p_int(d["seq"]),
            hash=p_str(d["hash"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Tenant(Result, Model):
    """A registered tenant."""

    id: str
    slug: str
    name: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Tenant:
        return cls(
            id=p_str(d["id"]),
            slug=p_str(d["slug"]),
            name=p_str(d["name"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class TenantList(_h.TenantListHelpers, ItemList[Tenant], Result, Model):
    """``TenantList`` of the contract."""

    items: List[Tenant]
    """By slug."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TenantList:
        return cls(
            items=p_list(d["items"], lambda v: Tenant.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class BudgetCurrent(Model):
    """The month's standing of a budget in force. left = limit - spent - held, never below zero."""

    month: str
    spent: Money
    held: Money
    left: Money
    spent_tokens: Decimal
    held_tokens: Decimal
    tokens_left: Optional[Decimal]
    crossed_pct: List[int]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BudgetCurrent:
        return cls(
            month=p_str(d["month"]),
            spent=Money.from_json(p_obj(d["spent"])),
            held=Money.from_json(p_obj(d["held"])),
            left=Money.from_json(p_obj(d["left"])),
            spent_tokens=p_dec(d["spent_tokens"]),
            held_tokens=p_dec(d["held_tokens"]),
            tokens_left=p_opt(d["tokens_left"], p_dec),
            crossed_pct=p_list(d["crossed_pct"], p_int),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Budget(Result, Model):
    """A budget (never its webhook secret, shown once at creation as `webhook_secret`)."""

    id: str
    tenant_id: str
    name: str
    period: str
    limit: Money
    tokens_limit: Optional[int]
    thresholds_pct: List[int]
    enforce: bool
    webhook_url: Optional[str]
    effective_from: _dt.datetime
    effective_to: Optional[_dt.datetime]
    status: str
    current: Optional[BudgetCurrent]
    webhook_secret: Optional[str] = None
    """Only in the answer to its creation."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Budget:
        return cls(
            id=p_str(d["id"]),
            tenant_id=p_str(d["tenant_id"]),
            name=p_str(d["name"]),
            period=p_str(d["period"]),
            limit=Money.from_json(p_obj(d["limit"])),
            tokens_limit=p_opt(d["tokens_limit"], p_int),
            thresholds_pct=p_list(d["thresholds_pct"], p_int),
            enforce=p_bool(d["enforce"]),
            webhook_url=p_opt(d["webhook_url"], p_str),
            effective_from=p_instant(d["effective_from"]),
            effective_to=p_opt(d["effective_to"], p_instant),
            status=p_str(d["status"]),
            current=p_opt(d["current"], lambda v: BudgetCurrent.from_json(p_obj(v))),
            webhook_secret=p_opt(d.get("webhook_secret"), p_str),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class BudgetList(_h.BudgetListHelpers, ItemList[Budget], Result, Model):
    """``BudgetList`` of the contract."""

    items: List[Budget]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BudgetList:
        return cls(
            items=p_list(d["items"], lambda v: Budget.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class BudgetChange(Result, Model):
    """``BudgetChange`` of the contract."""

    closed: Budget
    opened: Optional[Budget]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BudgetChange:
        return cls(
            closed=Budget.from_json(p_obj(d["closed"])),
            opened=p_opt(d["opened"], lambda v: Budget.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ReservationAmounts(_h.ReservationAmountsHelpers, Model):
    """``ReservationAmounts`` of the contract."""

    cost: Decimal
    tokens: Decimal
    currency: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReservationAmounts:
        return cls(
            cost=p_dec(d["cost"]),
            tokens=p_dec(d["tokens"]),
            currency=p_str(d["currency"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Reservation(Result, Model):
    """``Reservation`` of the contract."""

    id: str
    tenant_id: str
    action: str
    deployment_id: Optional[str]
    status: str
    estimate: ReservationAmounts
    actual: Optional[ReservationAmounts]
    created_at: _dt.datetime
    expires_at: _dt.datetime
    closed_at: Optional[_dt.datetime]
    usage_event_id: Optional[str]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Reservation:
        return cls(
            id=p_str(d["id"]),
            tenant_id=p_str(d["tenant_id"]),
            action=p_str(d["action"]),
            deployment_id=p_opt(d["deployment_id"], p_str),
            status=p_str(d["status"]),
            estimate=ReservationAmounts.from_json(p_obj(d["estimate"])),
            actual=p_opt(d["actual"], lambda v: ReservationAmounts.from_json(p_obj(v))),
            created_at=p_instant(d["created_at"]),
            expires_at=p_instant(d["expires_at"]),
            closed_at=p_opt(d["closed_at"], p_instant),
            usage_event_id=p_opt(d["usage_event_id"], p_str),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class TokenCost(_h.TokenCostHelpers, Model):
    """What a token costs: a deployment, a tenant's share of one, or a total (a tenant's, a model's) with its `deployments`. Amounts are the currency's minor unit (input is rounded once, output is the rest); rates per million tokens have 4 decimal places, rounded half away from zero, from the rounded amounts."""

    deployment_id: Optional[str]
    """Null on a tenant's or a model's total."""
    tenant_id: Optional[str]
    """The tenant whose share this is; null on a deployment's or a model's row."""
    model: Optional[str]
    """The model served (vLLM's `model_name`, else the usage events' `model.name`); null: not known."""
    currency: str
    cost: Decimal
    """allocation basis: the allocated cost (a deployment's `cost`, idle included; a tenant's allocated amount). usage basis: that times busy/total GPU-seconds."""
    input_cost: Optional[Decimal]
    """The cost borne by input tokens; null when the row has no tokens (on a total: when one of its parts has none, so the split would not cover its cost)."""
    output_cost: Optional[Decimal]
    """The cost borne by output tokens (cost - input_cost); null as input_cost is."""
    tokens_in: Decimal
    tokens_out: Decimal
    cached_tokens_in: Decimal
    """Input tokens served from vLLM's prefix cache (a tenant's: its share at the deployment's cache ratio)."""
    effective_tokens_in: Decimal
    """Input tokens that needed compute: the input rate's denominator."""
    tokens: Decimal
    token_source: str
    """vllm: the vLLM server's own counters (events of source vllm); usage_events: the tenants' usage events."""
    allocation_method: str
    """How input and output were split: measured prefill/decode time with the prefix cache left out of the input tokens (compute_time), without cache figures (compute_time_uncorrected), or the policy's output_token_weight (weight); mixed on a total over rows split differently."""
    output_token_weight: Optional[Decimal]
    """What an output token weighed against an effective input token (measured, or the policy's)."""
    cost_per_mtok: Optional[Decimal]
    """cost / tokens x 1,000,000; null without tokens."""
    input_cost_per_mtok: Optional[Decimal]
    """input_cost / effective_tokens_in x 1,000,000."""
    output_cost_per_mtok: Optional[Decimal]
    """output_cost / tokens_out x 1,000,000."""
    deployments: List[TokenCost] = field(default_factory=list)
    """On a tenant's or a model's total: its rows per deployment."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TokenCost:
        return cls(
            deployment_id=p_opt(d["deployment_id"], p_str),
            tenant_id=p_opt(d["tenant_id"], p_str),
            model=p_opt(d["model"], p_str),
            currency=p_str(d["currency"]),
            cost=p_dec(d["cost"]),
            input_cost=p_opt(d["input_cost"], p_dec),
            output_cost=p_opt(d["output_cost"], p_dec),
            tokens_in=p_dec(d["tokens_in"]),
            tokens_out=p_dec(d["tokens_out"]),
            cached_tokens_in=p_dec(d["cached_tokens_in"]),
            effective_tokens_in=p_dec(d["effective_tokens_in"]),
            tokens=p_dec(d["tokens"]),
            token_source=p_str(d["token_source"]),
            allocation_method=p_str(d["allocation_method"]),
            output_token_weight=p_opt(d["output_token_weight"], p_dec),
            cost_per_mtok=p_opt(d["cost_per_mtok"], p_dec),
            input_cost_per_mtok=p_opt(d["input_cost_per_mtok"], p_dec),
            output_cost_per_mtok=p_opt(d["output_cost_per_mtok"], p_dec),
            deployments=p_list(d.get("deployments"), lambda v: TokenCost.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class TokenCostList(_h.TokenCostListHelpers, ItemList[TokenCost], Result, Model):
    """``TokenCostList`` of the contract."""

    from_: _dt.datetime
    to: _dt.datetime
    basis: str
    aggregate: str
    items: List[TokenCost]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TokenCostList:
        return cls(
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            basis=p_str(d["basis"]),
            aggregate=p_str(d["aggregate"]),
            items=p_list(d["items"], lambda v: TokenCost.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class SeriesTotal(Model):
    """``SeriesTotal`` of the contract."""

    currency: str
    cost: Decimal
    allocated: Decimal
    unallocated: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesTotal:
        return cls(
            currency=p_str(d["currency"]),
            cost=p_dec(d["cost"]),
            allocated=p_dec(d["allocated"]),
            unallocated=p_dec(d["unallocated"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class SeriesDeployment(Model):
    """A deployment in one step (a tenant's readers: their share). Null amounts: tokens on a deployment that cost nothing in the step."""

    deployment_id: str
    currency: Optional[str]
    cost: Optional[Decimal]
    allocated: Optional[Decimal]
    unallocated: Optional[Decimal]
    tokens_in: Decimal
    tokens_out: Decimal
    tokens: Decimal
    cost_per_mtok: Optional[Decimal]
    """cost / tokens x 1,000,000 in the step (4 places, half away from zero); null without tokens or cost."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesDeployment:
        return cls(
            deployment_id=p_str(d["deployment_id"]),
            currency=p_opt(d["currency"], p_str),
            cost=p_opt(d["cost"], p_dec),
            allocated=p_opt(d["allocated"], p_dec),
            unallocated=p_opt(d["unallocated"], p_dec),
            tokens_in=p_dec(d["tokens_in"]),
            tokens_out=p_dec(d["tokens_out"]),
            tokens=p_dec(d["tokens"]),
            cost_per_mtok=p_opt(d["cost_per_mtok"], p_dec),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class SeriesStep(_h.SeriesStepHelpers, Model):
    """``SeriesStep`` of the contract."""

    from_: _dt.datetime
    to: _dt.datetime
    totals: List[SeriesTotal]
    """Per currency."""
    tokens_in: Decimal
    tokens_out: Decimal
    tokens: Decimal
    deployments: List[SeriesDeployment]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesStep:
        return cls(
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            totals=p_list(d["totals"], lambda v: SeriesTotal.from_json(p_obj(v))),
            tokens_in=p_dec(d["tokens_in"]),
            tokens_out=p_dec(d["tokens_out"]),
            tokens=p_dec(d["tokens"]),
            deployments=p_list(d["deployments"], lambda v: SeriesDeployment.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationSeries(_h.AllocationSeriesHelpers, Result, Model):
    """Cost over time: every column of the steps sums to the period's totals (and to GET /v1/finops/gpu/allocation's) to the cent."""

    from_: _dt.datetime
    to: _dt.datetime
    step: str
    totals: List[SeriesTotal]
    tokens_in: Decimal
    tokens_out: Decimal
    tokens: Decimal
    steps: List[SeriesStep]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationSeries:
        return cls(
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            step=p_str(d["step"]),
            totals=p_list(d["totals"], lambda v: SeriesTotal.from_json(p_obj(v))),
            tokens_in=p_dec(d["tokens_in"]),
            tokens_out=p_dec(d["tokens_out"]),
            tokens=p_dec(d["tokens"]),
            steps=p_list(d["steps"], lambda v: SeriesStep.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationParty(Model):
    """Who a line is about."""

    kind: str
    """`tenant`: the tenant `tenant_id`; `other_tenants`: every tenant but the reader, summed (shown to a tenant reader); `unallocated`: idle capacity (rounding lines only)."""
    tenant_id: Optional[str] = None
    """With kind `tenant` only."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationParty:
        return cls(
            kind=p_str(d["kind"]),
            tenant_id=p_opt(d.get("tenant_id"), p_str),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationPolicy(Model):
    """A policy that priced a bucket, with its rates."""

    policy_id: str
    name: str
    currency: str
    gpu_hourly_cost: Decimal
    overhead_pct: Decimal
    energy_kwh_price: Decimal
    pue: Decimal
    storage_gb_month_price: Decimal
    idle_capacity: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationPolicy:
        return cls(
            policy_id=p_str(d["policy_id"]),
            name=p_str(d["name"]),
            currency=p_str(d["currency"]),
            gpu_hourly_cost=p_dec(d["gpu_hourly_cost"]),
            overhead_pct=p_dec(d["overhead_pct"]),
            energy_kwh_price=p_dec(d["energy_kwh_price"]),
            pue=p_dec(d["pue"]),
            storage_gb_month_price=p_dec(d["storage_gb_month_price"]),
            idle_capacity=p_str(d["idle_capacity"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationClaim(Model):
    """``ExplanationClaim`` of the contract."""

    party: ExplanationParty
    gpu_seconds: Decimal
    tokens: Decimal
    share: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationClaim:
        return cls(
            party=ExplanationParty.from_json(p_obj(d["party"])),
            gpu_seconds=p_dec(d["gpu_seconds"]),
            tokens=p_dec(d["tokens"]),
            share=p_dec(d["share"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationPartyCost(Model):
    """``ExplanationPartyCost`` of the contract."""

    party: ExplanationParty
    cost: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationPartyCost:
        return cls(
            party=ExplanationParty.from_json(p_obj(d["party"])),
            cost=p_dec(d["cost"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationPriced(Model):
    """``ExplanationPriced`` of the contract."""

    policy_id: str
    currency: str
    gpu_seconds: Decimal
    energy_wh: Decimal
    gpu_time_cost: Decimal
    energy_cost: Decimal
    storage_cost: Decimal
    cost: Decimal
    parties: List[ExplanationPartyCost]
    idle: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationPriced:
        return cls(
            policy_id=p_str(d["policy_id"]),
            currency=p_str(d["currency"]),
            gpu_seconds=p_dec(d["gpu_seconds"]),
            energy_wh=p_dec(d["energy_wh"]),
            gpu_time_cost=p_dec(d["gpu_time_cost"]),
            energy_cost=p_dec(d["energy_cost"]),
            storage_cost=p_dec(d["storage_cost"]),
            cost=p_dec(d["cost"]),
            parties=p_list(d["parties"], lambda v: ExplanationPartyCost.from_json(p_obj(v))),
            idle=p_dec(d["idle"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationBucket(Model):
    """One allocation bucket of the deployment: what was measured, who claimed it and the share each got, and per pricing policy the exact cost and its split. `owner` is present for a dedicated deployment's time (all of it is the owner's)."""

    start: _dt.datetime
    gpu_seconds: Decimal
    estimated_gpu_seconds: Decimal
    over_attribution: bool
    """The claims' GPU-seconds exceeded what was measured: they were scaled down to it."""
    claims: List[ExplanationClaim]
    priced: List[ExplanationPriced]
    owner: Optional[ExplanationParty] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationBucket:
        return cls(
            start=p_instant(d["start"]),
            gpu_seconds=p_dec(d["gpu_seconds"]),
            estimated_gpu_seconds=p_dec(d["estimated_gpu_seconds"]),
            over_attribution=p_bool(d["over_attribution"]),
            claims=p_list(d["claims"], lambda v: ExplanationClaim.from_json(p_obj(v))),
            priced=p_list(d["priced"], lambda v: ExplanationPriced.from_json(p_obj(v))),
            owner=p_opt(d.get("owner"), lambda v: ExplanationParty.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationIdleShare(Model):
    """``ExplanationIdleShare`` of the contract."""

    party: ExplanationParty
    weight: Decimal
    cost: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationIdleShare:
        return cls(
            party=ExplanationParty.from_json(p_obj(d["party"])),
            weight=p_dec(d["weight"]),
            cost=p_dec(d["cost"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationIdleSpread(Model):
    """``ExplanationIdleSpread`` of the contract."""

    policy_id: str
    idle: Decimal
    parties: List[ExplanationIdleShare]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationIdleSpread:
        return cls(
            policy_id=p_str(d["policy_id"]),
            idle=p_dec(d["idle"]),
            parties=p_list(d["parties"], lambda v: ExplanationIdleShare.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationRoundingLine(Model):
    """``ExplanationRoundingLine`` of the contract."""

    party: ExplanationParty
    policy_id: str
    exact: Decimal
    scaled: Decimal
    floor: Decimal
    remainder_unit: Decimal
    amount: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationRoundingLine:
        return cls(
            party=ExplanationParty.from_json(p_obj(d["party"])),
            policy_id=p_str(d["policy_id"]),
            exact=p_dec(d["exact"]),
            scaled=p_dec(d["scaled"]),
            floor=p_dec(d["floor"]),
            remainder_unit=p_dec(d["remainder_unit"]),
            amount=p_dec(d["amount"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ExplanationRounding(Model):
    """``ExplanationRounding`` of the contract."""

    currency: str
    exact: Decimal
    cost: Decimal
    lines: List[ExplanationRoundingLine]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationRounding:
        return cls(
            currency=p_str(d["currency"]),
            exact=p_dec(d["exact"]),
            cost=p_dec(d["cost"]),
            lines=p_list(d["lines"], lambda v: ExplanationRoundingLine.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class GpuUsageRow(_h.GpuUsageRowHelpers, Model):
    """One row of a breakdown: its group's value of each dimension asked, what was measured, its cost per currency, and, grouped by `gpu`, its share of the GPU's time (`gpu_share`)."""

    group: Dict[str, Any]
    """Each dimension of `group_by` and the row's value of it; null: a shared deployment's tenant, or a placement (pod, namespace, node, share) of time stored before placements were kept."""
    samples: int
    """Samples received (each counted once, in the hour of its window start)."""
    estimated_samples: int
    """Windows estimated by interpolation over short gaps."""
    gpu_seconds: Decimal
    busy_gpu_seconds: Decimal
    estimated_gpu_seconds: Decimal
    gpu_memory_gb_seconds: Decimal
    energy_wh: Decimal
    unpriced_gpu_seconds: Decimal
    cost: List[Money]
    """The row's cost per currency (one, unless a policy of another currency priced part of it); empty when none of it was priced."""
    gpu_share: Optional[Decimal] = None
    """Only when `group_by` has `gpu`, and for a platform reader (a tenant is not told how much of a GPU the others used): the row's GPU-seconds over all the GPU-seconds of its GPU in the period (every pod's share and the idle share of a shared GPU, rows filtered out included), exact to 6 places. A pod that had its GPU to itself has 1."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GpuUsageRow:
        return cls(
            group=dict(p_obj(d["group"])),
            samples=p_int(d["samples"]),
            estimated_samples=p_int(d["estimated_samples"]),
            gpu_seconds=p_dec(d["gpu_seconds"]),
            busy_gpu_seconds=p_dec(d["busy_gpu_seconds"]),
            estimated_gpu_seconds=p_dec(d["estimated_gpu_seconds"]),
            gpu_memory_gb_seconds=p_dec(d["gpu_memory_gb_seconds"]),
            energy_wh=p_dec(d["energy_wh"]),
            unpriced_gpu_seconds=p_dec(d["unpriced_gpu_seconds"]),
            cost=p_list(d["cost"], lambda v: Money.from_json(p_obj(v))),
            gpu_share=p_opt(d.get("gpu_share"), p_dec),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AllocationExplanation(_h.AllocationExplanationHelpers, Result, Model):
    """Why a deployment costs what it does, bucket by bucket; its totals are the allocation's figures for the same period."""

    deployment_id: str
    from_: _dt.datetime
    to: _dt.datetime
    bucket_seconds: int
    policies: List[ExplanationPolicy]
    buckets: List[ExplanationBucket]
    idle_spread: List[ExplanationIdleSpread]
    """Idle capacity a `proportional` policy spread over the tenants, weighed by their allocated cost."""
    rounding: List[ExplanationRounding]
    """Each (deployment, currency) row: the exact sum rounded once (`cost`, the allocation's deployment cost), then apportioned by the largest-remainder method: each line's `scaled` quota floored to the minor unit, and the units left over one each to the largest remainders. `amount` is the allocation's item (or unallocated) figure."""
    pods: List[GpuUsageRow]
    """Where the deployment's time ran: its breakdown (as GET /v1/finops/gpu/usage?group_by=namespace,pod,gpu,share&filter=deployment:<id> answers it) by namespace, pod, GPU and share method. A pod on a GPU shared with others has its share of the GPU's time (`gpu_share`, platform readers) and how it was obtained (`share`: `measured` from per-process or per-container GPU time, `equal` for want of per-pod data). A tenant's reader sees the pods of its dedicated deployments only (empty for a shared deployment)."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationExplanation:
        return cls(
            deployment_id=p_str(d["deployment_id"]),
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            bucket_seconds=p_int(d["bucket_seconds"]),
            policies=p_list(d["policies"], lambda v: ExplanationPolicy.from_json(p_obj(v))),
            buckets=p_list(d["buckets"], lambda v: ExplanationBucket.from_json(p_obj(v))),
            idle_spread=p_list(d["idle_spread"], lambda v: ExplanationIdleSpread.from_json(p_obj(v))),
            rounding=p_list(d["rounding"], lambda v: ExplanationRounding.from_json(p_obj(v))),
            pods=p_list(d["pods"], lambda v: GpuUsageRow.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class GpuUsageBreakdown(_h.GpuUsageBreakdownHelpers, Result, Model):
    """``GpuUsageBreakdown`` of the contract."""

    from_: _dt.datetime
    to: _dt.datetime
    group_by: List[str]
    rows: List[GpuUsageRow]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GpuUsageBreakdown:
        return cls(
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            group_by=p_list(d["group_by"], p_str),
            rows=p_list(d["rows"], lambda v: GpuUsageRow.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class SlurmJobLine(_h.SlurmJobLineHelpers, Model):
    """One Slurm job: Slurm's allocation beside what was measured."""

    job_id: str
    account: str
    user: Optional[str]
    partition: Optional[str]
    state: Optional[str]
    tenant_id: Optional[str]
    """The tenant its GPUs were charged to (`[[slurm_account]]` in the sampler's rules); null: shared (no rule), or not measured."""
    deployment_id: Optional[str]
    """`slurm/<partition>` unless a rule names another."""
    gpus: Optional[int]
    """GPUs Slurm allocated; null: not in Slurm's accounting."""
    allocated_gpu_seconds: Optional[Decimal]
    """GPUs times the job's run time inside the period; null: not in Slurm's accounting."""
    measured_gpu_seconds: Decimal
    busy_gpu_seconds: Decimal
    busy_share: Optional[Decimal]
    """Busy GPU-seconds over the allocated (or, not in Slurm's accounting, the measured) GPU-seconds, 4 places."""
    cost: List[Money]
    status: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SlurmJobLine:
        return cls(
            job_id=p_str(d["job_id"]),
            account=p_str(d["account"]),
            user=p_opt(d["user"], p_str),
            partition=p_opt(d["partition"], p_str),
            state=p_opt(d["state"], p_str),
            tenant_id=p_opt(d["tenant_id"], p_str),
            deployment_id=p_opt(d["deployment_id"], p_str),
            gpus=p_opt(d["gpus"], p_int),
            allocated_gpu_seconds=p_opt(d["allocated_gpu_seconds"], p_dec),
            measured_gpu_seconds=p_dec(d["measured_gpu_seconds"]),
            busy_gpu_seconds=p_dec(d["busy_gpu_seconds"]),
            busy_share=p_opt(d["busy_share"], p_dec),
            cost=p_list(d["cost"], lambda v: Money.from_json(p_obj(v))),
            status=p_str(d["status"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class SlurmReconciliation(_h.SlurmReconciliationHelpers, Result, Model):
    """``SlurmReconciliation`` of the contract."""

    from_: _dt.datetime
    to: _dt.datetime
    idle_below: Decimal
    allocated_gpu_seconds: Decimal
    measured_gpu_seconds: Decimal
    idle_cost: List[Money]
    """The cost of the jobs marked `idle`, per currency."""
    jobs: List[SlurmJobLine]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SlurmReconciliation:
        return cls(
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            idle_below=p_dec(d["idle_below"]),
            allocated_gpu_seconds=p_dec(d["allocated_gpu_seconds"]),
            measured_gpu_seconds=p_dec(d["measured_gpu_seconds"]),
            idle_cost=p_list(d["idle_cost"], lambda v: Money.from_json(p_obj(v))),
            jobs=p_list(d["jobs"], lambda v: SlurmJobLine.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class IdleGpu(Model):
    """``IdleGpu`` of the contract."""

    gpu_uuid: str
    hours: int
    """Hours it ran for the deployment."""
    idle_hours: int
    """Of them, hours at most `idle_utilization` busy."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> IdleGpu:
        return cls(
            gpu_uuid=p_str(d["gpu_uuid"]),
            hours=p_int(d["hours"]),
            idle_hours=p_int(d["idle_hours"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class RecommendationEvidence(Model):
    """What a recommendation rests on, over the deployment's GPUs it is about (for `low_utilization`, those not idle; hours and GPU-hours as JSON numbers, 4 places)."""

    hours: int
    """Hours of the period in which these GPUs ran."""
    gpu_hours: Decimal
    busy_gpu_hours: Decimal
    utilization: Decimal
    """busy_gpu_hours / gpu_hours."""
    utilization_p50: Decimal
    """Median of the GPU-hours' utilizations (nearest rank)."""
    utilization_p95: Decimal
    """95th percentile of the GPU-hours' utilizations (nearest rank)."""
    peak_busy_gpus: Decimal
    """The busiest hour's busy GPU-hours: GPUs busy at once, on the hour's mean."""
    memory_peak_gb: Optional[Decimal]
    """The largest mean GPU memory of a GPU-hour, GB; null where no memory was reported."""
    profile_memory_gb: Optional[Decimal]
    """The suggested MIG profile's memory, GB (null: no profile)."""
    idle_gpus: List[IdleGpu]
    """`idle_gpus`: the GPUs idle for most of the hours they ran."""
    unpriced_gpu_hours: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RecommendationEvidence:
        return cls(
            hours=p_int(d["hours"]),
            gpu_hours=p_dec(d["gpu_hours"]),
            busy_gpu_hours=p_dec(d["busy_gpu_hours"]),
            utilization=p_dec(d["utilization"]),
            utilization_p50=p_dec(d["utilization_p50"]),
            utilization_p95=p_dec(d["utilization_p95"]),
            peak_busy_gpus=p_dec(d["peak_busy_gpus"]),
            memory_peak_gb=p_opt(d["memory_peak_gb"], p_dec),
            profile_memory_gb=p_opt(d["profile_memory_gb"], p_dec),
            idle_gpus=p_list(d["idle_gpus"], lambda v: IdleGpu.from_json(p_obj(v))),
            unpriced_gpu_hours=p_dec(d["unpriced_gpu_hours"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Recommendation(Model):
    """``Recommendation`` of the contract."""

    kind: str
    deployment_id: str
    model: str
    """The GPU model of most of its GPU time."""
    current_gpus: int
    """Distinct GPUs it ran on in the period."""
    gpus: int
    """`idle_gpus`: GPUs that could go; `low_utilization`: GPUs that would hold its load (each a `mig_profile` or `gpu_fraction` of a GPU where given); `unpriced`: GPUs with unpriced time."""
    action: str
    mig_profile: Optional[str]
    """`mig_profile`: e.g. `2g.20gb`."""
    gpu_fraction: Optional[Decimal]
    """`mig_profile` and `share_gpu`: the share of a GPU each of `gpus` would be."""
    evidence: RecommendationEvidence
    cost: Optional[Money]
    savings: Optional[Money]
    monthly_savings: Optional[Money]
    message: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Recommendation:
        return cls(
            kind=p_str(d["kind"]),
            deployment_id=p_str(d["deployment_id"]),
            model=p_str(d["model"]),
            current_gpus=p_int(d["current_gpus"]),
            gpus=p_int(d["gpus"]),
            action=p_str(d["action"]),
            mig_profile=p_opt(d["mig_profile"], p_str),
            gpu_fraction=p_opt(d["gpu_fraction"], p_dec),
            evidence=RecommendationEvidence.from_json(p_obj(d["evidence"])),
            cost=p_opt(d["cost"], lambda v: Money.from_json(p_obj(v))),
            savings=p_opt(d["savings"], lambda v: Money.from_json(p_obj(v))),
            monthly_savings=p_opt(d["monthly_savings"], lambda v: Money.from_json(p_obj(v))),
            message=p_str(d["message"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class RecommendationThresholds(Model):
    """``RecommendationThresholds`` of the contract."""

    idle_utilization: Decimal
    idle_share: Decimal
    low_utilization: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RecommendationThresholds:
        return cls(
            idle_utilization=p_dec(d["idle_utilization"]),
            idle_share=p_dec(d["idle_share"]),
            low_utilization=p_dec(d["low_utilization"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class RecommendationList(ItemList[Recommendation], Result, Model):
    """``RecommendationList`` of the contract."""

    from_: _dt.datetime
    to: _dt.datetime
    thresholds: RecommendationThresholds
    items: List[Recommendation]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RecommendationList:
        return cls(
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            thresholds=RecommendationThresholds.from_json(p_obj(d["thresholds"])),
            items=p_list(d["items"], lambda v: Recommendation.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ForecastLine(Model):
    """One tenant's spend on one deployment in one currency (`tenant_id` null: the deployment's unallocated idle capacity)."""

    tenant_id: Optional[str]
    deployment_id: str
    spent: Money
    expected: Money
    low: Money
    high: Money
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ForecastLine:
        return cls(
            tenant_id=p_opt(d["tenant_id"], p_str),
            deployment_id=p_str(d["deployment_id"]),
            spent=Money.from_json(p_obj(d["spent"])),
            expected=Money.from_json(p_obj(d["expected"])),
            low=Money.from_json(p_obj(d["low"])),
            high=Money.from_json(p_obj(d["high"])),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class ForecastTotal(Model):
    """``ForecastTotal`` of the contract."""

    tenant_id: Optional[str]
    spent: Money
    expected: Money
    low: Money
    high: Money
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ForecastTotal:
        return cls(
            tenant_id=p_opt(d["tenant_id"], p_str),
            spent=Money.from_json(p_obj(d["spent"])),
            expected=Money.from_json(p_obj(d["expected"])),
            low=Money.from_json(p_obj(d["low"])),
            high=Money.from_json(p_obj(d["high"])),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class BudgetForecast(Model):
    """``BudgetForecast`` of the contract."""

    budget_id: str
    tenant_id: str
    name: str
    limit: Money
    spent: Money
    expected: Money
    exhausted_on: Optional[_dt.date]
    """The day the limit is expected to be reached (null: not this month)."""
    exhausted_on_high: Optional[_dt.date]
    """The same at the band's high: the earliest it may be."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BudgetForecast:
        return cls(
            budget_id=p_str(d["budget_id"]),
            tenant_id=p_str(d["tenant_id"]),
            name=p_str(d["name"]),
            limit=Money.from_json(p_obj(d["limit"])),
            spent=Money.from_json(p_obj(d["spent"])),
            expected=Money.from_json(p_obj(d["expected"])),
            exhausted_on=p_opt(d["exhausted_on"], p_date),
            exhausted_on_high=p_opt(d["exhausted_on_high"], p_date),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Forecast(Result, Model):
    """``Forecast`` of the contract."""

    period: str
    from_: _dt.datetime
    to: _dt.datetime
    as_of: _dt.datetime
    """Spend is counted up to here (a midnight UTC); the model forecasts from here to `to`."""
    history_from: _dt.datetime
    days_left: int
    lines: List[ForecastLine]
    tenants: List[ForecastTotal]
    budgets: List[BudgetForecast]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Forecast:
        return cls(
            period=p_str(d["period"]),
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            as_of=p_instant(d["as_of"]),
            history_from=p_instant(d["history_from"]),
            days_left=p_int(d["days_left"]),
            lines=p_list(d["lines"], lambda v: ForecastLine.from_json(p_obj(v))),
            tenants=p_list(d["tenants"], lambda v: ForecastTotal.from_json(p_obj(v))),
            budgets=p_list(d["budgets"], lambda v: BudgetForecast.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Anomaly(Model):
    """``Anomaly`` of the contract."""

    id: str
    deployment_id: str
    hour: _dt.datetime
    metric: str
    currency: Optional[str]
    """`cost`: its currency."""
    value: Decimal
    baseline_median: Decimal
    baseline_mad: Decimal
    deviation_mads: Optional[Decimal]
    """|value - median| / (1.4826 x MAD), 2 places; null when the MAD is 0."""
    direction: str
    baseline_hours: int
    detected_at: _dt.datetime
    message: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Anomaly:
        return cls(
            id=p_str(d["id"]),
            deployment_id=p_str(d["deployment_id"]),
            hour=p_instant(d["hour"]),
            metric=p_str(d["metric"]),
            currency=p_opt(d["currency"], p_str),
            value=p_dec(d["value"]),
            baseline_median=p_dec(d["baseline_median"]),
            baseline_mad=p_dec(d["baseline_mad"]),
            deviation_mads=p_opt(d["deviation_mads"], p_dec),
            direction=p_str(d["direction"]),
            baseline_hours=p_int(d["baseline_hours"]),
            detected_at=p_instant(d["detected_at"]),
            message=p_str(d["message"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class AnomalyList(ItemList[Anomaly], Result, Model):
    """``AnomalyList`` of the contract."""

    from_: _dt.datetime
    to: _dt.datetime
    items: List[Anomaly]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AnomalyList:
        return cls(
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            items=p_list(d["items"], lambda v: Anomaly.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class StatementLine(Model):
    """A line of a statement: the tenant's GPU time on one deployment under one allocation policy in the month (`charge`), or the change that data arriving after the statement was issued made to it (`adjustment`: the allocation now minus the issued line; never a rewrite of the issued line)."""

    kind: str
    deployment_id: str
    policy_id: str
    gpu_hours: Decimal
    """GPU-hours allocated (an adjustment: their change), 6 places."""
    energy_kwh: Decimal
    """Energy allocated in kWh (an adjustment: its change), 6 places."""
    amount: Money
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StatementLine:
        return cls(
            kind=p_str(d["kind"]),
            deployment_id=p_str(d["deployment_id"]),
            policy_id=p_str(d["policy_id"]),
            gpu_hours=p_dec(d["gpu_hours"]),
            energy_kwh=p_dec(d["energy_kwh"]),
            amount=Money.from_json(p_obj(d["amount"])),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class StatementSummary(Model):
    """An issued statement without its lines."""

    number: str
    """`ST-YYYY-MM-NNNN`, unique, in the order statements were issued; the FOCUS `InvoiceId` of its rows."""
    tenant_id: str
    """The nil uuid for the statement of unallocated (idle) capacity, the platform's own."""
    tenant_name: Optional[str]
    period: str
    """The month, `YYYY-MM` (UTC)."""
    issued_at: _dt.datetime
    totals: List[Money]
    """One per currency, the sum of the lines."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StatementSummary:
        return cls(
            number=p_str(d["number"]),
            tenant_id=p_str(d["tenant_id"]),
            tenant_name=p_opt(d["tenant_name"], p_str),
            period=p_str(d["period"]),
            issued_at=p_instant(d["issued_at"]),
            totals=p_list(d["totals"], lambda v: Money.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class Statement(Result, Model):
    """A tenant's closed month as issued: immutable, audited, numbered. `lines` and `totals` are as issued; `adjustments` are computed at read time (`as_of`) from the allocation now, one per deployment and policy whose figures changed since issue, and `adjusted_totals` = totals + adjustments."""

    number: str
    """`ST-YYYY-MM-NNNN`, unique, in the order statements were issued; the FOCUS `InvoiceId` of its rows."""
    tenant_id: str
    """The nil uuid for the statement of unallocated (idle) capacity, the platform's own."""
    tenant_name: Optional[str]
    period: str
    from_: _dt.datetime
    to: _dt.datetime
    issued_at: _dt.datetime
    issued_by: str
    """Who issued it: the API key id, or `cli` for `eai-gpu statement --issue`."""
    lines: List[StatementLine]
    totals: List[Money]
    adjustments: List[StatementLine]
    adjusted_totals: List[Money]
    as_of: _dt.datetime
    """When the adjustments were computed."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Statement:
        return cls(
            number=p_str(d["number"]),
            tenant_id=p_str(d["tenant_id"]),
            tenant_name=p_opt(d["tenant_name"], p_str),
            period=p_str(d["period"]),
            from_=p_instant(d["from"]),
            to=p_instant(d["to"]),
            issued_at=p_instant(d["issued_at"]),
            issued_by=p_str(d["issued_by"]),
            lines=p_list(d["lines"], lambda v: StatementLine.from_json(p_obj(v))),
            totals=p_list(d["totals"], lambda v: Money.from_json(p_obj(v))),
            adjustments=p_list(d["adjustments"], lambda v: StatementLine.from_json(p_obj(v))),
            adjusted_totals=p_list(d["adjusted_totals"], lambda v: Money.from_json(p_obj(v))),
            as_of=p_instant(d["as_of"]),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class StatementList(Result, Model):
    """``StatementList`` of the contract."""

    statements: List[StatementSummary]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StatementList:
        return cls(
            statements=p_list(d["statements"], lambda v: StatementSummary.from_json(p_obj(v))),
            raw=p_raw(d),
        )


@dataclass(frozen=True)
class StatementIssued(Result, Model):
    """``StatementIssued`` of the contract."""

    issued: List[StatementSummary]
    """Issued by this call."""
    already_issued: List[StatementSummary]
    """Issued before; never issued twice."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON object as the server sent it (fields this SDK does not name included)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StatementIssued:
        return cls(
            issued=p_list(d["issued"], lambda v: StatementSummary.from_json(p_obj(v))),
            already_issued=p_list(d["already_issued"], lambda v: StatementSummary.from_json(p_obj(v))),
            raw=p_raw(d),
        )


class GpuSample(TypedDict, total=False):
    """What one GPU (or one MIG slice / time-slice of it) did during one window: the item of POST /v1/finops/gpu/samples (SPEC §2). A sample covers [timestamp - window_seconds, timestamp) and is identified by (gpu_uuid, timestamp): a re-sent sample is accepted again but counted once. Decimals are given as a JSON number or a decimal string. `null` on an optional field means absent. Unknown fields are rejected (validation_error)."""

    node: str
    """Kubernetes node name."""
    gpu_uuid: str
    """The GPU, with the MIG instance encoded in it if any (`GPU-…/mig-13`): the series a sample belongs to."""
    model: str
    """GPU model as reported, e.g. `H100-80GB`, `L40S` (matched by a policy's gpu_model, prefix or equal, case-insensitive)."""
    namespace: str
    """Kubernetes namespace of the pod."""
    pod: str
    """Pod name."""
    deployment_id: str
    """The model deployment the pod serves, e.g. `vllm-llama-70b`."""
    tenant_id: Optional[str]
    """The tenant that owns the pod (dedicated deployment: all of its cost goes to that tenant). Absent or null: a shared platform deployment."""
    window_seconds: Union[Decimal, int, str]
    """Window length in seconds: 0 < w <= 3600, at most 3 decimal places (more is rejected)."""
    utilization: Union[Decimal, int, str]
    """Busy fraction 0..=1 (DCGM reports percent: the sampler divides by 100). Rounded to 6 decimal places."""
    memory_used_gb: Union[Decimal, int, str]
    """GPU memory used, in GiB (1024^3 bytes, as in `H100-80GB`; the sampler divides DCGM's MiB by 1024): 0..=1048576, rounded to 10 decimal places."""
    power_w: Union[Decimal, int, str]
    """Average power over the window, in watts: 0..=1000000, rounded to 6 decimal places."""
    timestamp: Optional[Union[str, _dt.datetime, _dt.date]]
    """End of the window, RFC 3339 with at most millisecond precision (`2026-10-01T00:00:15Z`, any offset). Absent or null: time of receipt. Senders that retry MUST set it (it is half of the dedup key)."""
    storage_gb: Optional[Union[Decimal, int, str]]
    """Model/volume storage held by the pod during the window, in GiB: 0..=1000000000, rounded to 6 decimal places. Absent: 0."""
    gpu_fraction: Optional[Union[Decimal, int, str]]
    """Share of a physical GPU (MIG slice, time-slicing): 0 < f <= 1, rounded to 6 decimal places (so at least 0.000001). Absent: 1."""
    share_method: Optional[str]
    """How gpu_fraction was obtained (SPEC §11): exclusive (the default: one pod, or none, on the GPU), mig (a MIG instance's slices), measured (a GPU shared by several pods, each pod's share its measured GPU time), equal (several pods and no per-pod data: 1/n each, an estimate the allocation reports as equal_gpu_shares)."""


class UsageEventModelInput(TypedDict, total=False):
    """The model used. Other members are ignored."""

    provider: str
    """e.g. `local`, `vllm`."""
    name: str
    """e.g. `llama-70b-local`."""


class UsageEventCostInput(TypedDict, total=False):
    """Cost of the usage when known (the allocation batch sets it). Other members are ignored."""

    amount: Union[Decimal, int, str]
    """Amount, >= 0 and at most 10^12. At most 10 decimal places (more is rejected, not rounded)."""
    currency: str
    """ISO 4217 code, three capital letters."""


class UsageEvent(TypedDict, total=False):
    """One usage record (SPEC §2), schema_version 1.0: what a tenant consumed, reported by the gateway, a worker or the allocation batch (`gpu_local` events carrying allocation_policy_id). Ingested by POST /v1/usage/events; deduplicated by event_id (a re-sent event replaces, never doubles). The tenant comes from the credential: a tenant-scoped caller may omit tenant_id (if given it must equal the credential's); a platform identity must give it. `null` on an optional field means absent. Unknown top-level fields are rejected."""

    event_id: str
    """Dedup key, chosen by the producer (uuid)."""
    schema_version: Any
    """Version of this contract."""
    tenant_id: Optional[str]
    """The tenant charged. Omitted by tenant credentials (taken from the key); required from a platform identity. Omitted on events of source `vllm` (they belong to no tenant)."""
    usage_type: str
    """What was consumed, e.g. `llm_tokens`, `gpu_local`."""
    source: str
    """Who reports it, e.g. `gateway`, `worker`, `allocation` (events of source `allocation` never weigh a GPU split). Events of source `vllm` are a vLLM server's own counters for a whole deployment (units tokens_in, tokens_out, cached_tokens_in, prefill_seconds, decode_seconds, requests): posted by a sampler (or a platform admin) without tenant_id, they measure cost per token and never weigh a split."""
    occurred_at: Union[str, _dt.datetime, _dt.date]
    """When it happened, RFC 3339 with at most millisecond precision; picks the allocation bucket."""
    deployment_id: Optional[str]
    """The model deployment used; needed for the event to weigh a shared deployment's split."""
    model: Optional[UsageEventModelInput]
    """The model used. Other members are ignored."""
    units: Dict[str, Any]
    """Unit name -> quantity: `tokens_in`, `tokens_out`, `gpu_seconds`, `gpu_memory_gb_seconds`, `energy_wh`, … Unit names are 1-64 lowercase letters, digits and `_`. May be empty."""
    cost: Optional[UsageEventCostInput]
    """Cost of the usage when known (the allocation batch sets it). Other members are ignored."""
    allocation_policy_id: Optional[str]
    """The allocation policy that priced it (`alp_1`), on `gpu_local` events."""
    project: Optional[str]
    """Trace context: project."""
    agent_id: Optional[str]
    """Trace context: agent."""
    run_id: Optional[str]
    """Trace context: run."""


class GpuSampleBatch(TypedDict, total=False):
    """A batch is atomic: one invalid sample rejects it all (422 with one detail per bad field and sample index)."""

    samples: List[GpuSample]


class UsageEventBatch(TypedDict, total=False):
    """A batch is atomic: one invalid event rejects it all."""

    events: List[UsageEvent]


class AllocationPolicyCreate(TypedDict, total=False):
    """A new allocation policy (platform_admin). Money and rates as decimal strings (numbers accepted). `null` means absent (the default). Unknown fields are rejected."""

    name: str
    """Name shown in the policies table."""
    deployment_pattern: Optional[str]
    """Glob on deployment_id: `*` any run of characters, `?` one; default `*`."""
    gpu_model: Optional[str]
    """Matches the sample's model by prefix or equality, case-insensitive (e.g. `L40S`). Absent: any model."""
    currency: Optional[str]
    """ISO 4217, three capital letters; default USD."""
    gpu_hourly_cost: Union[Decimal, int, str]
    """Price of one GPU-hour (a whole GPU; a MIG slice pays its fraction). At most 10 decimal places (more is rejected, not rounded)."""
    overhead_pct: Optional[Union[Decimal, int, str]]
    """Percent added to the GPU cost (default 0), 0..=10000. At most 10 decimal places (more is rejected, not rounded)."""
    energy_kwh_price: Optional[Union[Decimal, int, str]]
    """Price of one kWh (default 0), 0..=1000000. At most 10 decimal places (more is rejected, not rounded)."""
    pue: Optional[Union[Decimal, int, str]]
    """Power usage effectiveness: 1..=100 (default 1). At most 10 decimal places."""
    storage_gb_month_price: Optional[Union[Decimal, int, str]]
    """Price of one GiB held for 30 days (default 0), 0..=1000000. At most 10 decimal places (more is rejected, not rounded)."""
    idle_capacity: Optional[str]
    """GPU time no usage event accounts for: stays `unallocated` (default) or is spread `proportional`ly over the deployment's tenants."""
    output_token_weight: Optional[Union[Decimal, int, str]]
    """What one output token weighs against one input token when a deployment's cost per token is split between input and output without measured prefill and decode time (default 2.5), 0.1..=1000, at most 10 decimal places."""
    enabled: Optional[bool]
    """Default true."""
    effective_from: Optional[str]
    """Inclusive; a date means its midnight UTC. Default: now."""
    effective_to: Optional[str]
    """Exclusive, after effective_from; absent: open-ended."""


class AllocationPolicySupersede(TypedDict, total=False):
    """Closes the policy at effective_at and opens its replacement from that instant: the fields of the closed policy overridden by the fields given here (a field given as null takes its default). Pricing is never edited in place."""

    name: Optional[str]
    """Name shown in the policies table."""
    deployment_pattern: Optional[str]
    """Glob on deployment_id: `*` any run of characters, `?` one; default `*`."""
    gpu_model: Optional[str]
    """Matches the sample's model by prefix or equality, case-insensitive (e.g. `L40S`). Absent: any model."""
    currency: Optional[str]
    """ISO 4217, three capital letters; default USD."""
    gpu_hourly_cost: Optional[Union[Decimal, int, str]]
    """Price of one GPU-hour (a whole GPU; a MIG slice pays its fraction). At most 10 decimal places (more is rejected, not rounded)."""
    overhead_pct: Optional[Union[Decimal, int, str]]
    """Percent added to the GPU cost (default 0), 0..=10000. At most 10 decimal places (more is rejected, not rounded)."""
    energy_kwh_price: Optional[Union[Decimal, int, str]]
    """Price of one kWh (default 0), 0..=1000000. At most 10 decimal places (more is rejected, not rounded)."""
    pue: Optional[Union[Decimal, int, str]]
    """Power usage effectiveness: 1..=100 (default 1). At most 10 decimal places."""
    storage_gb_month_price: Optional[Union[Decimal, int, str]]
    """Price of one GiB held for 30 days (default 0), 0..=1000000. At most 10 decimal places (more is rejected, not rounded)."""
    idle_capacity: Optional[str]
    """GPU time no usage event accounts for: stays `unallocated` (default) or is spread `proportional`ly over the deployment's tenants."""
    output_token_weight: Optional[Union[Decimal, int, str]]
    """What one output token weighs against one input token when a deployment's cost per token is split between input and output without measured prefill and decode time (default 2.5), 0.1..=1000, at most 10 decimal places."""
    enabled: Optional[bool]
    """Default true."""
    effective_from: Optional[str]
    """Inclusive; a date means its midnight UTC. Default: now."""
    effective_to: Optional[str]
    """Exclusive, after effective_from; absent: open-ended."""
    effective_at: Optional[str]
    """When the policy is closed and its replacement starts: inside [effective_from, effective_to) of the policy. A date means its midnight UTC. Default: now."""


class AllocationPolicyDisable(TypedDict, total=False):
    """Closes the policy at effective_at and opens a disabled copy from that instant."""

    effective_at: Optional[str]
    """When the policy is closed and its replacement starts: inside [effective_from, effective_to) of the policy. A date means its midnight UTC. Default: now."""


class ApiKeyCreate(TypedDict, total=False):
    """A new API key (platform_admin). Unknown fields are rejected."""

    role: str
    tenant_id: Optional[str]
    """The tenant the key is bound to; required for every role but platform_admin, sampler and usage_reporter (they act for every tenant)."""
    name: Optional[str]
    """A label for people."""
    expires_at: Optional[str]
    """After this instant (a date or RFC 3339, in the future) the key is refused (401, message: expired)."""
    nodes: Optional[List[str]]
    """Sampler keys only: the node names it may post samples of (a sample of another node refuses its batch, 422 by index). Omit for any node."""


class ApiKeyRotate(TypedDict, total=False):
    """How long the previous secret keeps working (default 0: it stops at once)."""

    grace_seconds: int


class TenantCreate(TypedDict, total=False):
    """A tenant to register (POST /v1/tenants). Give `id` to name a tenant already seen in data by its uuid."""

    slug: str
    name: str
    """Display name (1 to 200 characters)."""
    id: str
    """The tenant's id (default: a new uuid)."""


class MoneyInput(TypedDict, total=False):
    """An amount (a decimal string or a number, at most 10 places) and its currency."""

    amount: Union[Decimal, int, str]
    currency: str


class BudgetCreate(TypedDict, total=False):
    """A monthly budget of one tenant (POST /v1/finops/budgets). The tenant: `tenant_id`, or the one X-EAI-Tenant names, or a finops key's own."""

    tenant_id: str
    name: str
    period: str
    """Calendar months, UTC (the only period)."""
    limit: MoneyInput
    tokens_limit: Union[int, str]
    thresholds_pct: List[int]
    """Percentages of the limit that alert once a month each (default [50, 80, 100])."""
    enforce: bool
    """Refuse reservations that would pass the limit (default false: alert only)."""
    webhook_url: str
    """Where threshold crossings are POSTed, signed (X-EAI-Signature: t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the webhook secret>)."""
    effective_from: str
    """A date or an RFC 3339 date-time (default now)."""
    effective_to: str
    """A date or an RFC 3339 date-time, after effective_from."""


class BudgetSupersede(TypedDict, total=False):
    """Fields that change from the closed budget (others carried over); its successor starts at effective_at (default now)."""

    name: str
    limit: MoneyInput
    tokens_limit: Union[int, str]
    thresholds_pct: List[int]
    """Percentages of the limit that alert once a month each (default [50, 80, 100])."""
    enforce: bool
    """Refuse reservations that would pass the limit (default false: alert only)."""
    webhook_url: str
    """Where threshold crossings are POSTed, signed (X-EAI-Signature: t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the webhook secret>)."""
    effective_to: str
    """A date or an RFC 3339 date-time, after effective_from."""
    effective_at: str
    """A date or an RFC 3339 date-time (default now), after the budget's start."""


class BudgetDisable(TypedDict, total=False):
    """``BudgetDisable`` of the contract."""

    effective_at: str
    """A date or an RFC 3339 date-time (default now), after the budget's start."""


class ReservationCreateEstimateInput(TypedDict, total=False):
    """``ReservationCreateEstimateInput`` of the contract."""

    cost: Union[Decimal, int, str]
    tokens: Union[int, str]
    currency: str


class ReservationCreate(TypedDict, total=False):
    """A hold against the tenant's enforcing budgets. The tenant: the caller's, or the one X-EAI-Tenant or `tenant_id` names (the gateway). The estimate's currency defaults to the one currency of the tenant's budgets (USD without any)."""

    tenant_id: str
    action: str
    """What the hold is for (the usage type of the event a commit records), e.g. llm.invoke."""
    estimate: ReservationCreateEstimateInput
    deployment_id: str
    ttl_seconds: int
    """How long the hold lasts (default 300): an expired hold frees itself."""


class ReservationCommitActualInput(TypedDict, total=False):
    """``ReservationCommitActualInput`` of the contract."""

    cost: Union[Decimal, int, str]
    tokens: Union[int, str]
    currency: str


class ReservationCommit(TypedDict, total=False):
    """``ReservationCommit`` of the contract."""

    actual: ReservationCommitActualInput


class ProviderCreate(TypedDict, total=False):
    """A provider registration: the deployment's OpenAI-compatible endpoint. A new registration of a deployment replaces the previous one."""

    deployment_id: str
    base_url: str
    """e.g. `http://vllm-llama-70b.ai.svc:8000/v1`; the control plane calls GET {base_url}/models to confirm it (a trailing slash is dropped)."""
    label: Optional[str]
    enabled: Optional[bool]
    """Default true."""
    verify: Optional[bool]
    """Default true: refuse a base_url whose GET /models lists no model (422 on base_url). false: register it as `config`, unconfirmed."""


class SacctDocumentJobsInput(TypedDict, total=False):
    """``SacctDocumentJobsInput`` of the contract."""

    job_id: Union[Dict[str, Any], int]
    """A number, or `{"set": true, "number": n}` (Slurm 23 on)."""
    account: Optional[str]
    user: Optional[str]
    partition: Optional[str]
    state: Dict[str, Any]
    time: Dict[str, Any]
    tres: Dict[str, Any]


class SacctDocument(TypedDict, total=False):
    """The output of `sacct --json` (Slurm 22.05 on): its `jobs` are read, every other field ignored."""

    jobs: List[SacctDocumentJobsInput]


class StatementIssue(TypedDict, total=False):
    """Issue the statements of a month that is over."""

    period: str
    """The month, `YYYY-MM` (UTC); it must be over."""
    tenant_id: Optional[str]
    """One tenant's statement; absent: every tenant with cost in the month, and the statement of unallocated capacity (the nil uuid)."""

ApiKey.register(ApiKeyCreated)
