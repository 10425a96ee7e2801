"""Typed results (frozen dataclasses) and typed inputs (``TypedDict``) of the API.

Money and every quantity are :class:`~decimal.Decimal`, never ``float``: the server writes exact decimals
(money as strings such as ``"412.70"``, quantities as exact JSON numbers) and the SDK reads them digit for
digit. Instants are timezone-aware :class:`~datetime.datetime` (UTC).

Every result keeps the JSON object it was read from in ``.raw`` (excluded from ``repr`` and equality): fields
a newer server adds are there before the SDK knows them, and unknown fields never break parsing.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Iterator,
    List,
    Mapping,
    Optional,
    TypedDict,
    TypeVar,
    Union,
    overload,
)

from ._json import parse_instant

__all__ = [
    "Allocation",
    "AllocationDaily",
    "AllocationDeployment",
    "AllocationFinding",
    "AllocationGap",
    "AllocationItem",
    "AllocationPolicy",
    "AllocationPolicyChange",
    "AllocationPolicyCreated",
    "AllocationPolicyList",
    "AllocationSeries",
    "AllocationTenant",
    "ApiKey",
    "ApiKeyCreated",
    "ApiKeyList",
    "AuditEvent",
    "AuditEventList",
    "AuditHead",
    "Budget",
    "BudgetChange",
    "BudgetCurrent",
    "BudgetList",
    "Catalog",
    "GpuSample",
    "GpuUsageBreakdown",
    "GpuUsageRow",
    "IngestResult",
    "ItemList",
    "Money",
    "Provider",
    "ProviderPricing",
    "Reservation",
    "ReservationAmounts",
    "SampleIngestResult",
    "SeriesDeployment",
    "SeriesStep",
    "SeriesTotal",
    "SlurmJobLine",
    "SlurmReconciliation",
    "Tenant",
    "TenantList",
    "TenantRef",
    "TokenCost",
    "TokenCostList",
    "UsageEvent",
    "UsageIngestResult",
    "WhoAmI",
]

T = TypeVar("T")

Number = Union[int, float, str, Decimal]


# --------------------------------------------------------------------------------------------------- inputs


class GpuSample(TypedDict, total=False):
    """One GPU sample (``contracts/v1/gpu-sample.schema.json``). ``timestamp`` may be left out: the SDK
    stamps it once, before the first attempt, so that a retry never counts twice."""

    node: str
    gpu_uuid: str
    model: str
    namespace: str
    pod: str
    deployment_id: str
    tenant_id: Optional[str]
    window_seconds: Number
    utilization: Number
    memory_used_gb: Number
    power_w: Number
    timestamp: Union[str, _dt.datetime, None]
    storage_gb: Optional[Number]
    gpu_fraction: Optional[Number]
    share_method: Optional[str]
    """How ``gpu_fraction`` was obtained: ``"exclusive"`` (the default: one pod, or none, on the GPU),
    ``"mig"`` (a MIG instance's slices), ``"measured"`` (a GPU shared by several pods, each pod's share its
    measured GPU time) or ``"equal"`` (several pods and no per-pod data: 1/n each, an estimate the allocation
    reports as the finding ``equal_gpu_shares``). ``None``: exclusive."""


class _UsageModel(TypedDict):
    provider: str
    name: str


class _UsageCost(TypedDict):
    amount: Number
    currency: str


class UsageEvent(TypedDict, total=False):
    """One usage event (``contracts/v1/usage-event.schema.json``). ``event_id`` (uuid4),
    ``schema_version`` (``"1.0"``) and ``occurred_at`` (now) are filled in by the SDK when absent."""

    event_id: str
    schema_version: str
    tenant_id: Optional[str]
    usage_type: str
    source: str
    occurred_at: Union[str, _dt.datetime]
    deployment_id: Optional[str]
    model: Optional[_UsageModel]
    units: Mapping[str, Number]
    cost: Optional[_UsageCost]
    allocation_policy_id: Optional[str]
    project: Optional[str]
    agent_id: Optional[str]
    run_id: Optional[str]


# ------------------------------------------------------------------------------------------- value helpers


def _dec(value: Any) -> Decimal:
    if isinstance(value, bool):
        raise TypeError(f"expected a decimal, got a boolean: {value!r}")
    if isinstance(value, Decimal):
        return value
    if isinstance(value, (int, str)):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    raise TypeError(f"expected a decimal, got {type(value).__name__}: {value!r}")


def _opt_dec(value: Any) -> Optional[Decimal]:
    return None if value is None else _dec(value)


def _str(value: Any) -> str:
    if value is None:
        raise TypeError("expected a string, got null")
    return str(value)


def _opt_str(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)):
        raise TypeError(f"expected an integer, got {value!r}")
    return int(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected a boolean, got {value!r}")
    return value


def _instant(value: Any) -> _dt.datetime:
    return parse_instant(_str(value))


def _opt_instant(value: Any) -> Optional[_dt.datetime]:
    return None if value is None else _instant(value)


def _list(value: Any, parse: Callable[[Mapping[str, Any]], T]) -> List[T]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return [parse(_obj(v)) for v in value]


def _obj(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


def _raw(d: Mapping[str, Any]) -> Dict[str, Any]:
    return dict(d)


# ------------------------------------------------------------------------------------------------- common


class _Model:
    """What every result has: ``request_id``, the ``X-Request-Id`` of the answer it came from (``None`` for
    a part of a result, or one built by hand). Not a field: out of equality, ``repr`` and
    ``dataclasses.asdict``."""

    @property
    def request_id(self) -> Optional[str]:
        value = self.__dict__.get("_request_id")
        return value if isinstance(value, str) else None

    def _set_request_id(self, request_id: Optional[str]) -> None:
        object.__setattr__(self, "_request_id", request_id)


@dataclass(frozen=True)
class Money(_Model):
    """An amount in a currency, rounded to the currency's minor unit (``Money(Decimal("412.70"), "EUR")``)."""

    amount: Decimal
    currency: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Money:
        return cls(amount=_dec(d["amount"]), currency=_str(d["currency"]))

    def __str__(self) -> str:
        return f"{self.amount} {self.currency}"


@dataclass(frozen=True)
class ItemList(_Model, Generic[T]):
    """A list answer (``{"items": [...]}``): iterable, sized and indexable like a list."""

    items: List[T]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> List[T]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[T, List[T]]:
        return self.items[index]

    def __bool__(self) -> bool:
        return bool(self.items)


# ----------------------------------------------------------------------------------------------- ingest


@dataclass(frozen=True)
class IngestResult(_Model):
    """What the server counted for an ingest call, summed over every request the SDK made.

    ``accepted`` is the server's count (summed over batches); ``requests`` the number of successful HTTP
    requests the records went in (batches, after any split on 413). ``raw`` holds every integer counter of the
    server's answers summed, so that counters added by a newer server are summed too.
    """

    accepted: int
    requests: int
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class SampleIngestResult(IngestResult):
    """Result of :meth:`~enterprise_ai.resources.Finops.gpu_samples`.

    ``accepted``: samples of the batches, re-sent duplicates included; ``duplicates``: of those, samples the
    server already held (same ``gpu_uuid`` and ``timestamp``), counted once.
    """

    duplicates: int = 0

    @property
    def new(self) -> int:
        """Samples stored for the first time (``accepted - duplicates``)."""
        return self.accepted - self.duplicates


@dataclass(frozen=True)
class UsageIngestResult(IngestResult):
    """Result of :meth:`~enterprise_ai.resources.Usage.events`: ``accepted`` events (a re-sent
    ``event_id`` replaces the stored event) and the ``event_ids`` sent, in the order of your list (ids the SDK
    generated included)."""

    event_ids: List[str] = field(default_factory=list, repr=False)


# ----------------------------------------------------------------------------------------------- allocation


@dataclass(frozen=True)
class AllocationItem(_Model):
    """What a tenant is charged for a deployment under one policy."""

    tenant_id: str
    deployment_id: str
    gpu_seconds: Decimal
    gpu_memory_gb_seconds: Decimal
    energy_wh: Decimal
    allocated: Money
    policy_id: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationItem:
        return cls(
            tenant_id=_str(d["tenant_id"]),
            deployment_id=_str(d["deployment_id"]),
            gpu_seconds=_dec(d["gpu_seconds"]),
            gpu_memory_gb_seconds=_dec(d["gpu_memory_gb_seconds"]),
            energy_wh=_dec(d["energy_wh"]),
            allocated=Money.from_json(_obj(d["allocated"])),
            policy_id=_str(d["policy_id"]),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class AllocationDeployment(_Model):
    """One row per (deployment, currency). To the cent: ``allocated + unallocated == cost``."""

    deployment_id: str
    dedicated: bool
    samples: int
    estimated_samples: int
    gpus: int
    gpu_hours: Decimal
    busy_gpu_hours: Decimal
    estimated_gpu_seconds: Decimal
    gpu_memory_gb_seconds: Decimal
    energy_kwh: Decimal
    cost: Decimal
    allocated: Decimal
    unallocated: Decimal
    unpriced_samples: int
    currency: Optional[str]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationDeployment:
        return cls(
            deployment_id=_str(d["deployment_id"]),
            dedicated=_bool(d["dedicated"]),
            samples=_int(d["samples"]),
            estimated_samples=_int(d["estimated_samples"]),
            gpus=_int(d["gpus"]),
            gpu_hours=_dec(d["gpu_hours"]),
            busy_gpu_hours=_dec(d["busy_gpu_hours"]),
            estimated_gpu_seconds=_dec(d["estimated_gpu_seconds"]),
            gpu_memory_gb_seconds=_dec(d["gpu_memory_gb_seconds"]),
            energy_kwh=_dec(d["energy_kwh"]),
            cost=_dec(d["cost"]),
            allocated=_dec(d["allocated"]),
            unallocated=_dec(d["unallocated"]),
            unpriced_samples=_int(d["unpriced_samples"]),
            currency=_opt_str(d.get("currency")),
            raw=_raw(d),
        )

    @property
    def cost_money(self) -> Optional[Money]:
        """``cost`` with its currency (``None`` when nothing of the deployment was priced)."""
        return None if self.currency is None else Money(self.cost, self.currency)


@dataclass(frozen=True)
class AllocationTenant(_Model):
    """One row per (tenant, currency): GPU-seconds, share of the view's cost (0..1) and cost."""

    tenant_id: str
    gpu_seconds: Decimal
    share: Decimal
    cost: Money
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationTenant:
        return cls(
            tenant_id=_str(d["tenant_id"]),
            gpu_seconds=_dec(d["gpu_seconds"]),
            share=_dec(d["share"]),
            cost=Money.from_json(_obj(d["cost"])),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class AllocationDaily(_Model):
    """Cost of a deployment on one UTC day."""

    date: _dt.date
    deployment_id: str
    cost: Money
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationDaily:
        return cls(
            date=_dt.date.fromisoformat(_str(d["date"])),
            deployment_id=_str(d["deployment_id"]),
            cost=Money.from_json(_obj(d["cost"])),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class AllocationGap(_Model):
    """A span of a GPU series with no sample that was not filled (``reason``: ``too_long``,
    ``series_changed``)."""

    gpu_uuid: str
    node: str
    deployment_id: str
    from_: _dt.datetime
    to: _dt.datetime
    reason: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationGap:
        return cls(
            gpu_uuid=_str(d["gpu_uuid"]),
            node=_str(d["node"]),
            deployment_id=_str(d["deployment_id"]),
            from_=_instant(d["from"]),
            to=_instant(d["to"]),
            reason=_str(d["reason"]),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class AllocationFinding(_Model):
    """Something the figures rest on that a FinOps reader should know (``code``: ``unpriced_samples``,
    ``over_attribution``, ``usage_without_samples``, ``equal_gpu_shares``, ...)."""

    code: str
    message: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationFinding:
        return cls(code=_str(d["code"]), message=_str(d["message"]), raw=_raw(d))


@dataclass(frozen=True)
class Allocation(_Model):
    """The GPU cost allocation of a period ``[from_, to)`` (``from_`` because ``from`` is a keyword).

    A tenant-scoped view (a tenant key, or a platform key signed in with ``tenant=``) holds only that tenant's
    items, tenant row and share of each deployment.
    """

    period: str
    from_: _dt.datetime
    to: _dt.datetime
    items: List[AllocationItem]
    deployments: List[AllocationDeployment]
    tenants: List[AllocationTenant]
    daily: List[AllocationDaily]
    gaps: List[AllocationGap]
    findings: List[AllocationFinding]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Allocation:
        return cls(
            period=_str(d["period"]),
            from_=_instant(d["from"]),
            to=_instant(d["to"]),
            items=_list(d.get("items"), AllocationItem.from_json),
            deployments=_list(d.get("deployments"), AllocationDeployment.from_json),
            tenants=_list(d.get("tenants"), AllocationTenant.from_json),
            daily=_list(d.get("daily"), AllocationDaily.from_json),
            gaps=_list(d.get("gaps"), AllocationGap.from_json),
            findings=_list(d.get("findings"), AllocationFinding.from_json),
            raw=_raw(d),
        )

    def deployment(
        self, deployment_id: str, currency: Optional[str] = None
    ) -> Optional[AllocationDeployment]:
        """The row of a deployment (in ``currency`` when given), or ``None``."""
        for row in self.deployments:
            if row.deployment_id == deployment_id and (currency is None or row.currency == currency):
                return row
        return None

    def tenant(self, tenant_id: str, currency: Optional[str] = None) -> Optional[AllocationTenant]:
        """The row of a tenant (in ``currency`` when given), or ``None``."""
        for row in self.tenants:
            if row.tenant_id == tenant_id and (currency is None or row.cost.currency == currency):
                return row
        return None

    def items_for(
        self, *, tenant_id: Optional[str] = None, deployment_id: Optional[str] = None
    ) -> List[AllocationItem]:
        """The items of a tenant and/or a deployment."""
        return [
            i
            for i in self.items
            if (tenant_id is None or i.tenant_id == tenant_id)
            and (deployment_id is None or i.deployment_id == deployment_id)
        ]

    @property
    def tenant_ids(self) -> List[str]:
        """The tenants of the view (from its tenant rows and items), in order of first appearance."""
        seen: List[str] = []
        for t in [r.tenant_id for r in self.tenants] + [i.tenant_id for i in self.items]:
            if t not in seen:
                seen.append(t)
        return seen


# ------------------------------------------------------------------------------------------- cost per token


@dataclass(frozen=True)
class TokenCost(_Model):
    """What a token costs: a deployment (``deployment_id``), a tenant's share of one (``deployment_id`` and
    ``tenant_id``), or a total (a tenant's or a model's) with its rows per deployment in ``deployments``.

    Amounts are ``Decimal`` in the currency's minor unit (``input_cost`` is rounded once, ``output_cost`` is
    ``cost - input_cost``; both ``None`` when the row has no tokens). Rates are per million tokens, 4 decimal
    places, ``None`` without tokens. Token counts are exact ``Decimal`` quantities.

    ``token_source``: ``vllm`` (the vLLM server's own counters), ``usage_events`` or ``mixed``.
    ``allocation_method``: ``compute_time`` (measured prefill/decode time, prefix cache left out),
    ``compute_time_uncorrected`` (no cache figures), ``weight`` (the policy's ``output_token_weight``) or
    ``mixed`` (a total over rows split differently).
    """

    deployment_id: Optional[str]
    tenant_id: Optional[str]
    model: Optional[str]
    currency: str
    cost: Decimal
    input_cost: Optional[Decimal]
    output_cost: Optional[Decimal]
    tokens_in: Decimal
    tokens_out: Decimal
    cached_tokens_in: Decimal
    effective_tokens_in: Decimal
    tokens: Decimal
    token_source: str
    allocation_method: str
    output_token_weight: Optional[Decimal]
    cost_per_mtok: Optional[Decimal]
    input_cost_per_mtok: Optional[Decimal]
    output_cost_per_mtok: Optional[Decimal]
    deployments: List[TokenCost] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TokenCost:
        return cls(
            deployment_id=_opt_str(d.get("deployment_id")),
            tenant_id=_opt_str(d.get("tenant_id")),
            model=_opt_str(d.get("model")),
            currency=_str(d["currency"]),
            cost=_dec(d["cost"]),
            input_cost=_opt_dec(d.get("input_cost")),
            output_cost=_opt_dec(d.get("output_cost")),
            tokens_in=_dec(d["tokens_in"]),
            tokens_out=_dec(d["tokens_out"]),
            cached_tokens_in=_dec(d["cached_tokens_in"]),
            effective_tokens_in=_dec(d["effective_tokens_in"]),
            tokens=_dec(d["tokens"]),
            token_source=_str(d["token_source"]),
            allocation_method=_str(d["allocation_method"]),
            output_token_weight=_opt_dec(d.get("output_token_weight")),
            cost_per_mtok=_opt_dec(d.get("cost_per_mtok")),
            input_cost_per_mtok=_opt_dec(d.get("input_cost_per_mtok")),
            output_cost_per_mtok=_opt_dec(d.get("output_cost_per_mtok")),
            deployments=_list(d.get("deployments"), TokenCost.from_json),
            raw=_raw(d),
        )

    @property
    def cost_money(self) -> Money:
        """``cost`` with its currency."""
        return Money(self.cost, self.currency)


@dataclass(frozen=True)
class TokenCostList(_Model):
    """Cost per token of a period ``[from_, to)`` (``GET /v1/finops/gpu/token-costs``): iterable, sized and
    indexable like a list of :class:`TokenCost`. ``basis``: ``allocation`` or ``usage``; ``aggregate``:
    ``deployment``, ``tenant`` or ``model``. A tenant-scoped view holds only that tenant's share."""

    from_: _dt.datetime
    to: _dt.datetime
    basis: str
    aggregate: str
    items: List[TokenCost]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TokenCostList:
        return cls(
            from_=_instant(d["from"]),
            to=_instant(d["to"]),
            basis=_str(d["basis"]),
            aggregate=_str(d["aggregate"]),
            items=_list(d.get("items"), TokenCost.from_json),
            raw=_raw(d),
        )

    def __iter__(self) -> Iterator[TokenCost]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> TokenCost: ...

    @overload
    def __getitem__(self, index: slice) -> List[TokenCost]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[TokenCost, List[TokenCost]]:
        return self.items[index]

    def __bool__(self) -> bool:
        return bool(self.items)

    def deployment(self, deployment_id: str) -> Optional[TokenCost]:
        """The first row of a deployment (``aggregate="deployment"``), or ``None``."""
        return next((r for r in self.items if r.deployment_id == deployment_id), None)

    def tenant(self, tenant_id: str) -> Optional[TokenCost]:
        """The first row of a tenant (``aggregate="tenant"``), or ``None``."""
        return next((r for r in self.items if r.tenant_id == tenant_id), None)

    def model(self, model: str) -> Optional[TokenCost]:
        """The first row of a model (``aggregate="model"``), or ``None``."""
        return next((r for r in self.items if r.model == model), None)


# ------------------------------------------------------------------------------------------ cost over time


@dataclass(frozen=True)
class SeriesTotal(_Model):
    """A currency's cost, allocated and unallocated amounts (of a step, or of the whole series)."""

    currency: str
    cost: Decimal
    allocated: Decimal
    unallocated: Decimal
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesTotal:
        return cls(
            currency=_str(d["currency"]),
            cost=_dec(d["cost"]),
            allocated=_dec(d["allocated"]),
            unallocated=_dec(d["unallocated"]),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class SeriesDeployment(_Model):
    """A deployment in one step (a tenant's view: its share). The amounts (and ``currency``) are ``None``
    when the deployment had tokens but cost nothing in the step."""

    deployment_id: str
    currency: Optional[str]
    cost: Optional[Decimal]
    allocated: Optional[Decimal]
    unallocated: Optional[Decimal]
    tokens_in: Decimal
    tokens_out: Decimal
    tokens: Decimal
    cost_per_mtok: Optional[Decimal]
    """``cost`` per million tokens in the step (4 places); ``None`` without tokens or cost."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesDeployment:
        return cls(
            deployment_id=_str(d["deployment_id"]),
            currency=_opt_str(d.get("currency")),
            cost=_opt_dec(d.get("cost")),
            allocated=_opt_dec(d.get("allocated")),
            unallocated=_opt_dec(d.get("unallocated")),
            tokens_in=_dec(d["tokens_in"]),
            tokens_out=_dec(d["tokens_out"]),
            tokens=_dec(d["tokens"]),
            cost_per_mtok=_opt_dec(d.get("cost_per_mtok")),
            raw=_raw(d),
        )


def _total(totals: List[SeriesTotal], currency: Optional[str]) -> Optional[SeriesTotal]:
    return next((t for t in totals if currency is None or t.currency == currency), None)


@dataclass(frozen=True)
class SeriesStep(_Model):
    """One step ``[from_, to)`` of a series: its totals per currency, tokens and deployments."""

    from_: _dt.datetime
    to: _dt.datetime
    totals: List[SeriesTotal]
    tokens_in: Decimal
    tokens_out: Decimal
    tokens: Decimal
    deployments: List[SeriesDeployment]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesStep:
        return cls(
            from_=_instant(d["from"]),
            to=_instant(d["to"]),
            totals=_list(d.get("totals"), SeriesTotal.from_json),
            tokens_in=_dec(d["tokens_in"]),
            tokens_out=_dec(d["tokens_out"]),
            tokens=_dec(d["tokens"]),
            deployments=_list(d.get("deployments"), SeriesDeployment.from_json),
            raw=_raw(d),
        )

    def total(self, currency: Optional[str] = None) -> Optional[SeriesTotal]:
        """The step's total in ``currency`` (the first one when not given), or ``None``."""
        return _total(self.totals, currency)

    def deployment(self, deployment_id: str, currency: Optional[str] = None) -> Optional[SeriesDeployment]:
        """The step's row of a deployment (in ``currency`` when given), or ``None``."""
        for row in self.deployments:
            if row.deployment_id == deployment_id and (currency is None or row.currency == currency):
                return row
        return None


@dataclass(frozen=True)
class AllocationSeries(_Model):
    """Cost over time (``GET /v1/finops/gpu/allocation/series``): the period ``[from_, to)`` cut into steps
    (``step``: ``hour``, ``day``, ``week`` or ``month``, UTC). Every column of the steps sums to ``totals``
    (and to the allocation of the period) to the cent."""

    from_: _dt.datetime
    to: _dt.datetime
    step: str
    totals: List[SeriesTotal]
    tokens_in: Decimal
    tokens_out: Decimal
    tokens: Decimal
    steps: List[SeriesStep]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationSeries:
        return cls(
            from_=_instant(d["from"]),
            to=_instant(d["to"]),
            step=_str(d["step"]),
            totals=_list(d.get("totals"), SeriesTotal.from_json),
            tokens_in=_dec(d["tokens_in"]),
            tokens_out=_dec(d["tokens_out"]),
            tokens=_dec(d["tokens"]),
            steps=_list(d.get("steps"), SeriesStep.from_json),
            raw=_raw(d),
        )

    def total(self, currency: Optional[str] = None) -> Optional[SeriesTotal]:
        """The period's total in ``currency`` (the first one when not given), or ``None``."""
        return _total(self.totals, currency)


# ----------------------------------------------------------------------------------------------- explain


@dataclass(frozen=True)
class ExplanationParty(_Model):
    """Who a line of an explanation is about: ``kind`` ``"tenant"`` (``tenant_id`` set), ``"other_tenants"``
    (every tenant but the reader, summed) or, in the rounding, ``"unallocated"`` (idle capacity)."""

    kind: str
    tenant_id: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationParty:
        return cls(kind=_str(d["kind"]), tenant_id=_opt_str(d.get("tenant_id")))


@dataclass(frozen=True)
class ExplanationPolicy(_Model):
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

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationPolicy:
        return cls(
            policy_id=_str(d["policy_id"]),
            name=_str(d["name"]),
            currency=_str(d["currency"]),
            gpu_hourly_cost=_dec(d["gpu_hourly_cost"]),
            overhead_pct=_dec(d["overhead_pct"]),
            energy_kwh_price=_dec(d["energy_kwh_price"]),
            pue=_dec(d["pue"]),
            storage_gb_month_price=_dec(d["storage_gb_month_price"]),
            idle_capacity=_str(d["idle_capacity"]),
        )


@dataclass(frozen=True)
class ExplanationClaim(_Model):
    """A tenant's claim on a shared bucket and the share of the bucket it gave."""

    party: ExplanationParty
    gpu_seconds: Decimal
    tokens: Decimal
    share: Decimal

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationClaim:
        return cls(
            party=ExplanationParty.from_json(_obj(d["party"])),
            gpu_seconds=_dec(d["gpu_seconds"]),
            tokens=_dec(d["tokens"]),
            share=_dec(d["share"]),
        )


@dataclass(frozen=True)
class ExplanationPartyCost(_Model):
    party: ExplanationParty
    cost: Decimal

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationPartyCost:
        return cls(party=ExplanationParty.from_json(_obj(d["party"])), cost=_dec(d["cost"]))


@dataclass(frozen=True)
class ExplanationPriced(_Model):
    """A bucket's time under one policy: its exact cost (``gpu_time_cost + energy_cost + storage_cost``) and
    each party's exact part of it; ``idle`` is what no claim accounted for."""

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

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationPriced:
        return cls(
            policy_id=_str(d["policy_id"]),
            currency=_str(d["currency"]),
            gpu_seconds=_dec(d["gpu_seconds"]),
            energy_wh=_dec(d["energy_wh"]),
            gpu_time_cost=_dec(d["gpu_time_cost"]),
            energy_cost=_dec(d["energy_cost"]),
            storage_cost=_dec(d["storage_cost"]),
            cost=_dec(d["cost"]),
            parties=_list(d.get("parties"), ExplanationPartyCost.from_json),
            idle=_dec(d["idle"]),
        )


@dataclass(frozen=True)
class ExplanationBucket(_Model):
    """One allocation bucket of the deployment (``owner`` set for a dedicated deployment's time)."""

    start: _dt.datetime
    gpu_seconds: Decimal
    estimated_gpu_seconds: Decimal
    over_attribution: bool
    claims: List[ExplanationClaim]
    priced: List[ExplanationPriced]
    owner: Optional[ExplanationParty] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationBucket:
        owner = d.get("owner")
        return cls(
            start=_instant(d["start"]),
            gpu_seconds=_dec(d["gpu_seconds"]),
            estimated_gpu_seconds=_dec(d["estimated_gpu_seconds"]),
            over_attribution=_bool(d["over_attribution"]),
            claims=_list(d.get("claims"), ExplanationClaim.from_json),
            priced=_list(d.get("priced"), ExplanationPriced.from_json),
            owner=None if owner is None else ExplanationParty.from_json(_obj(owner)),
        )


@dataclass(frozen=True)
class ExplanationIdleShare(_Model):
    party: ExplanationParty
    weight: Decimal
    cost: Decimal

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationIdleShare:
        return cls(
            party=ExplanationParty.from_json(_obj(d["party"])), weight=_dec(d["weight"]), cost=_dec(d["cost"])
        )


@dataclass(frozen=True)
class ExplanationIdleSpread(_Model):
    """Idle capacity a ``proportional`` policy spread over the tenants, weighed by their allocated cost."""

    policy_id: str
    idle: Decimal
    parties: List[ExplanationIdleShare]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationIdleSpread:
        return cls(
            policy_id=_str(d["policy_id"]),
            idle=_dec(d["idle"]),
            parties=_list(d.get("parties"), ExplanationIdleShare.from_json),
        )


@dataclass(frozen=True)
class ExplanationRoundingLine(_Model):
    """One line of the rounding: ``exact`` scaled to the rounded cost, floored to the minor unit, plus the
    unit the largest-remainder step gave (or not): ``amount`` is the allocation's figure."""

    party: ExplanationParty
    policy_id: str
    exact: Decimal
    scaled: Decimal
    floor: Decimal
    remainder_unit: Decimal
    amount: Decimal

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationRoundingLine:
        return cls(
            party=ExplanationParty.from_json(_obj(d["party"])),
            policy_id=_str(d["policy_id"]),
            exact=_dec(d["exact"]),
            scaled=_dec(d["scaled"]),
            floor=_dec(d["floor"]),
            remainder_unit=_dec(d["remainder_unit"]),
            amount=_dec(d["amount"]),
        )


@dataclass(frozen=True)
class ExplanationRounding(_Model):
    """A (deployment, currency) row: ``exact`` rounded once to ``cost``, then apportioned over ``lines``."""

    currency: str
    exact: Decimal
    cost: Decimal
    lines: List[ExplanationRoundingLine]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExplanationRounding:
        return cls(
            currency=_str(d["currency"]),
            exact=_dec(d["exact"]),
            cost=_dec(d["cost"]),
            lines=_list(d.get("lines"), ExplanationRoundingLine.from_json),
        )


@dataclass(frozen=True)
class AllocationExplanation(_Model):
    """Why a deployment costs what it does (``GET /v1/finops/gpu/allocation/explain``), bucket by bucket; its
    rounded lines are the allocation's items and unallocated figures for the same period, to the cent.
    ``pods`` says where the deployment's time ran: its :class:`GpuUsageRow` rows grouped by ``namespace``,
    ``pod``, ``gpu`` and ``share`` (a tenant's key: the pods of its dedicated deployments only, none of a
    shared one)."""

    deployment_id: str
    from_: _dt.datetime
    to: _dt.datetime
    bucket_seconds: int
    policies: List[ExplanationPolicy]
    buckets: List[ExplanationBucket]
    idle_spread: List[ExplanationIdleSpread]
    rounding: List[ExplanationRounding]
    pods: List[GpuUsageRow]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationExplanation:
        return cls(
            deployment_id=_str(d["deployment_id"]),
            from_=_instant(d["from"]),
            to=_instant(d["to"]),
            bucket_seconds=_int(d["bucket_seconds"]),
            policies=_list(d.get("policies"), ExplanationPolicy.from_json),
            buckets=_list(d.get("buckets"), ExplanationBucket.from_json),
            idle_spread=_list(d.get("idle_spread"), ExplanationIdleSpread.from_json),
            rounding=_list(d.get("rounding"), ExplanationRounding.from_json),
            pods=_list(d.get("pods"), GpuUsageRow.from_json),
            raw=_raw(d),
        )

    def amount(self, tenant_id: str, currency: Optional[str] = None) -> Decimal:
        """What ``tenant_id`` is charged on the deployment (in ``currency``, or every currency's sum)."""
        return sum(
            (
                line.amount
                for r in self.rounding
                if currency is None or r.currency == currency
                for line in r.lines
                if line.party.tenant_id == tenant_id
            ),
            Decimal(0),
        )


# ------------------------------------------------------------------------------------------------- usage


@dataclass(frozen=True)
class GpuUsageRow(_Model):
    """One row of a usage breakdown: its ``group`` (each dimension asked and the row's value of it; ``None``:
    a shared deployment's tenant, or a placement of time stored before placements were kept), what was
    measured, and its ``cost`` per currency (empty when none of it was priced).

    ``gpu_share``: grouped by ``gpu`` and read with a platform key, the row's GPU-seconds over all those of
    its GPU in the period (exact to 6 places; ``1`` for a pod that had its GPU to itself); ``None`` otherwise
    (a tenant's key is not told how much of a GPU the others used)."""

    group: Dict[str, Optional[str]]
    samples: int
    estimated_samples: int
    gpu_seconds: Decimal
    busy_gpu_seconds: Decimal
    estimated_gpu_seconds: Decimal
    gpu_memory_gb_seconds: Decimal
    energy_wh: Decimal
    unpriced_gpu_seconds: Decimal
    cost: List[Money]
    gpu_share: Optional[Decimal] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GpuUsageRow:
        return cls(
            group={_str(k): _opt_str(v) for k, v in _obj(d["group"]).items()},
            samples=_int(d["samples"]),
            estimated_samples=_int(d["estimated_samples"]),
            gpu_seconds=_dec(d["gpu_seconds"]),
            busy_gpu_seconds=_dec(d["busy_gpu_seconds"]),
            estimated_gpu_seconds=_dec(d["estimated_gpu_seconds"]),
            gpu_memory_gb_seconds=_dec(d["gpu_memory_gb_seconds"]),
            energy_wh=_dec(d["energy_wh"]),
            unpriced_gpu_seconds=_dec(d["unpriced_gpu_seconds"]),
            cost=_list(d.get("cost"), Money.from_json),
            gpu_share=_opt_dec(d.get("gpu_share")),
            raw=_raw(d),
        )

    def amount(self, currency: str) -> Decimal:
        """The row's cost in ``currency`` (``0`` when it has none in it)."""
        return sum((m.amount for m in self.cost if m.currency == currency), Decimal(0))


@dataclass(frozen=True)
class GpuUsageBreakdown(_Model):
    """GPU time and cost of ``[from_, to)`` per the ``group_by`` dimensions (``GET /v1/finops/gpu/usage``),
    rows sorted by their group's values. A deployment's rows sum to its allocation cost to the cent."""

    from_: _dt.datetime
    to: _dt.datetime
    group_by: List[str]
    rows: List[GpuUsageRow]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GpuUsageBreakdown:
        group_by = d.get("group_by") or []
        if not isinstance(group_by, list):
            raise TypeError(f"expected a list, got {type(group_by).__name__}")
        return cls(
            from_=_instant(d["from"]),
            to=_instant(d["to"]),
            group_by=[_str(g) for g in group_by],
            rows=_list(d.get("rows"), GpuUsageRow.from_json),
            raw=_raw(d),
        )

    def total(self, currency: str) -> Decimal:
        """The rows' cost in ``currency``, summed (``0`` when none is in it)."""
        return sum((r.amount(currency) for r in self.rows), Decimal(0))


# ------------------------------------------------------------------------------------------------- slurm


@dataclass(frozen=True)
class SlurmJobLine(_Model):
    """One Slurm job of a :class:`SlurmReconciliation`: Slurm's allocation beside what was measured.

    ``status``: ``"ok"``; ``"idle"`` (its GPUs busy less than ``idle_below`` of the time Slurm allocated
    them); ``"not_measured"`` (allocated, nothing measured: no sampler on its nodes); ``"not_in_slurm"``
    (measured -- pod ``job-<id>`` -- but not in the sacct document). ``gpus``, ``allocated_gpu_seconds``:
    ``None`` when not in Slurm's accounting. ``busy_share``: busy over allocated (or, not in Slurm's
    accounting, over measured) GPU-seconds, 4 places; ``None`` when there is nothing to divide by.
    ``tenant_id``: the tenant its GPUs were charged to, ``None`` when shared or not measured. ``cost``: its
    part of the allocation, per currency (empty when none of it was priced)."""

    job_id: str
    account: str
    user: Optional[str]
    partition: Optional[str]
    state: Optional[str]
    tenant_id: Optional[str]
    deployment_id: Optional[str]
    gpus: Optional[int]
    allocated_gpu_seconds: Optional[Decimal]
    measured_gpu_seconds: Decimal
    busy_gpu_seconds: Decimal
    busy_share: Optional[Decimal]
    cost: List[Money]
    status: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SlurmJobLine:
        gpus = d.get("gpus")
        return cls(
            job_id=_str(d["job_id"]),
            account=_str(d["account"]),
            user=_opt_str(d.get("user")),
            partition=_opt_str(d.get("partition")),
            state=_opt_str(d.get("state")),
            tenant_id=_opt_str(d.get("tenant_id")),
            deployment_id=_opt_str(d.get("deployment_id")),
            gpus=None if gpus is None else _int(gpus),
            allocated_gpu_seconds=_opt_dec(d.get("allocated_gpu_seconds")),
            measured_gpu_seconds=_dec(d["measured_gpu_seconds"]),
            busy_gpu_seconds=_dec(d["busy_gpu_seconds"]),
            busy_share=_opt_dec(d.get("busy_share")),
            cost=_list(d.get("cost"), Money.from_json),
            status=_str(d["status"]),
            raw=_raw(d),
        )

    def amount(self, currency: str) -> Decimal:
        """The job's cost in ``currency`` (``0`` when it has none in it)."""
        return sum((m.amount for m in self.cost if m.currency == currency), Decimal(0))


@dataclass(frozen=True)
class SlurmReconciliation(_Model):
    """Slurm's accounting of its GPU jobs over ``[from_, to)`` beside what was measured
    (``POST /v1/finops/gpu/slurm/reconciliation``): the ``jobs`` in job id order, the GPU-seconds Slurm
    allocated and those measured of them in all, and ``idle_cost``, the cost of the jobs marked ``idle`` per
    currency. ``idle_below``: the threshold the server applied (the one asked, or its default ``0.1``)."""

    from_: _dt.datetime
    to: _dt.datetime
    idle_below: Decimal
    allocated_gpu_seconds: Decimal
    measured_gpu_seconds: Decimal
    idle_cost: List[Money]
    jobs: List[SlurmJobLine]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SlurmReconciliation:
        return cls(
            from_=_instant(d["from"]),
            to=_instant(d["to"]),
            idle_below=_dec(d["idle_below"]),
            allocated_gpu_seconds=_dec(d["allocated_gpu_seconds"]),
            measured_gpu_seconds=_dec(d["measured_gpu_seconds"]),
            idle_cost=_list(d.get("idle_cost"), Money.from_json),
            jobs=_list(d.get("jobs"), SlurmJobLine.from_json),
            raw=_raw(d),
        )

    def job(self, job_id: Union[str, int]) -> Optional[SlurmJobLine]:
        """The line of a job (``"42"`` or ``42``), or ``None``."""
        return next((j for j in self.jobs if j.job_id == str(job_id)), None)

    def with_status(self, status: str) -> List[SlurmJobLine]:
        """The jobs of one ``status`` (``"ok"``, ``"idle"``, ``"not_measured"``, ``"not_in_slurm"``)."""
        return [j for j in self.jobs if j.status == status]

    def idle_amount(self, currency: str) -> Decimal:
        """``idle_cost`` in ``currency`` (``0`` when none is in it)."""
        return sum((m.amount for m in self.idle_cost if m.currency == currency), Decimal(0))


# ------------------------------------------------------------------------------------------------ policies


@dataclass(frozen=True)
class AllocationPolicy(_Model):
    """A stored allocation policy (``status``: ``active``, ``scheduled``, ``closed``, ``disabled``). Never
    edited in place: a change closes it (``effective_to``) and opens another."""

    id: str
    status: str
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
    enabled: bool
    effective_from: _dt.datetime
    effective_to: Optional[_dt.datetime]
    created_at: Optional[_dt.datetime] = None
    created_by: Optional[str] = None
    output_token_weight: Optional[Decimal] = None
    """What an output token weighs against an input token when a deployment's cost per token is split without
    measured prefill and decode time (default ``Decimal("2.5")``; ``None`` from a server that predates it)."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationPolicy:
        return cls(
            id=_str(d["id"]),
            status=_str(d["status"]),
            name=_str(d["name"]),
            deployment_pattern=_str(d["deployment_pattern"]),
            gpu_model=_opt_str(d.get("gpu_model")),
            currency=_str(d["currency"]),
            gpu_hourly_cost=_dec(d["gpu_hourly_cost"]),
            overhead_pct=_dec(d["overhead_pct"]),
            energy_kwh_price=_dec(d["energy_kwh_price"]),
            pue=_dec(d["pue"]),
            storage_gb_month_price=_dec(d["storage_gb_month_price"]),
            idle_capacity=_str(d["idle_capacity"]),
            enabled=_bool(d["enabled"]),
            effective_from=_instant(d["effective_from"]),
            effective_to=_opt_instant(d.get("effective_to")),
            created_at=_opt_instant(d.get("created_at")),
            created_by=_opt_str(d.get("created_by")),
            output_token_weight=_opt_dec(d.get("output_token_weight")),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class AllocationPolicyCreated(_Model):
    """The answer to a policy creation: its id (``alp_1``) and status."""

    id: str
    status: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationPolicyCreated:
        return cls(id=_str(d["id"]), status=_str(d["status"]), raw=_raw(d))


@dataclass(frozen=True)
class AllocationPolicyChange(_Model):
    """A supersede or disable: the policy as closed, and the one opened in its place."""

    closed: AllocationPolicy
    opened: AllocationPolicy
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationPolicyChange:
        return cls(
            closed=AllocationPolicy.from_json(_obj(d["closed"])),
            opened=AllocationPolicy.from_json(_obj(d["opened"])),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class AllocationPolicyList(ItemList[AllocationPolicy]):
    """Every policy, closed ones included, oldest first."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AllocationPolicyList:
        return cls(items=_list(d.get("items"), AllocationPolicy.from_json), raw=_raw(d))

    def get(self, policy_id: str) -> Optional[AllocationPolicy]:
        """The policy with this id, or ``None``."""
        return next((p for p in self.items if p.id == policy_id), None)


# ------------------------------------------------------------------------------------------------ budgets


@dataclass(frozen=True)
class BudgetCurrent(_Model):
    """The month's standing of a budget in force: ``left = limit - spent - held`` (never below zero);
    ``tokens_left`` is ``None`` without a token limit; ``crossed_pct`` lists the thresholds crossed."""

    month: str
    spent: Money
    held: Money
    left: Money
    spent_tokens: Decimal
    held_tokens: Decimal
    tokens_left: Optional[Decimal]
    crossed_pct: List[int]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BudgetCurrent:
        crossed = d.get("crossed_pct") or []
        return cls(
            month=_str(d["month"]),
            spent=Money.from_json(_obj(d["spent"])),
            held=Money.from_json(_obj(d["held"])),
            left=Money.from_json(_obj(d["left"])),
            spent_tokens=_dec(d["spent_tokens"]),
            held_tokens=_dec(d["held_tokens"]),
            tokens_left=_opt_dec(d.get("tokens_left")),
            crossed_pct=[_int(v) for v in crossed],
            raw=_raw(d),
        )


@dataclass(frozen=True)
class Budget(_Model):
    """A monthly budget of one tenant (``status``: ``active``, ``scheduled``, ``closed``). Never edited in
    place: a supersede closes it and opens its successor. ``current`` is the month's standing of one in force
    (else ``None``); ``webhook_secret`` is only set in the answer to its creation (with a ``webhook_url``)."""

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
    webhook_secret: Optional[str] = field(default=None, repr=False)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Budget:
        current = d.get("current")
        tokens_limit = d.get("tokens_limit")
        return cls(
            id=_str(d["id"]),
            tenant_id=_str(d["tenant_id"]),
            name=_str(d["name"]),
            period=_str(d.get("period", "month")),
            limit=Money.from_json(_obj(d["limit"])),
            tokens_limit=None if tokens_limit is None else _int(tokens_limit),
            thresholds_pct=[_int(v) for v in d.get("thresholds_pct") or []],
            enforce=_bool(d["enforce"]),
            webhook_url=_opt_str(d.get("webhook_url")),
            effective_from=_instant(d["effective_from"]),
            effective_to=_opt_instant(d.get("effective_to")),
            status=_str(d["status"]),
            current=None if current is None else BudgetCurrent.from_json(_obj(current)),
            webhook_secret=_opt_str(d.get("webhook_secret")),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class BudgetChange(_Model):
    """A supersede or disable: the budget as closed, and its successor (``None`` after a disable)."""

    closed: Budget
    opened: Optional[Budget]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BudgetChange:
        opened = d.get("opened")
        return cls(
            closed=Budget.from_json(_obj(d["closed"])),
            opened=None if opened is None else Budget.from_json(_obj(opened)),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class BudgetList(ItemList[Budget]):
    """The budgets, closed ones included, oldest first."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BudgetList:
        return cls(items=_list(d.get("items"), Budget.from_json), raw=_raw(d))

    def get(self, budget_id: str) -> Optional[Budget]:
        """The budget with this id, or ``None``."""
        return next((b for b in self.items if b.id == budget_id), None)


@dataclass(frozen=True)
class ReservationAmounts(_Model):
    """The estimate or the actual of a reservation: a cost, a token count and their currency."""

    cost: Decimal
    tokens: Decimal
    currency: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReservationAmounts:
        return cls(cost=_dec(d["cost"]), tokens=_dec(d["tokens"]), currency=_str(d["currency"]), raw=_raw(d))

    @property
    def money(self) -> Money:
        """The cost as :class:`Money`."""
        return Money(self.cost, self.currency)


@dataclass(frozen=True)
class Reservation(_Model):
    """A hold against a tenant's enforcing budgets (``status``: ``held``, ``committed``, ``released``,
    ``expired``). A commit records one usage event (``usage_event_id``) with the ``actual`` amounts."""

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

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Reservation:
        actual = d.get("actual")
        return cls(
            id=_str(d["id"]),
            tenant_id=_str(d["tenant_id"]),
            action=_str(d["action"]),
            deployment_id=_opt_str(d.get("deployment_id")),
            status=_str(d["status"]),
            estimate=ReservationAmounts.from_json(_obj(d["estimate"])),
            actual=None if actual is None else ReservationAmounts.from_json(_obj(actual)),
            created_at=_instant(d["created_at"]),
            expires_at=_instant(d["expires_at"]),
            closed_at=_opt_instant(d.get("closed_at")),
            usage_event_id=_opt_str(d.get("usage_event_id")),
            raw=_raw(d),
        )


# ------------------------------------------------------------------------------------------------ catalog


@dataclass(frozen=True)
class ProviderPricing(_Model):
    """What a provider's tokens cost over the last closed UTC month (``period``, ``YYYY-MM``): its whole
    allocated cost, idle included (``basis`` ``allocation``), per million tokens. A rate is ``None`` when
    there was no such token."""

    per_mtok: Optional[Decimal]
    input_per_mtok: Optional[Decimal]
    output_per_mtok: Optional[Decimal]
    currency: str
    period: str
    basis: str
    allocation_method: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ProviderPricing:
        return cls(
            per_mtok=_opt_dec(d.get("per_mtok")),
            input_per_mtok=_opt_dec(d.get("input_per_mtok")),
            output_per_mtok=_opt_dec(d.get("output_per_mtok")),
            currency=_str(d["currency"]),
            period=_str(d["period"]),
            basis=_str(d["basis"]),
            allocation_method=_str(d["allocation_method"]),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class Provider(_Model):
    """A local inference provider of the catalog: a deployment's OpenAI-compatible endpoint.

    ``discovery``: ``api`` (registered and confirmed by its model list), ``config`` (registered, not
    confirmed) or ``samples`` (only seen in GPU samples; ``base_url`` is the in-cluster URL its name gives).
    ``pricing`` is ``None`` when it served no token in the last closed month."""

    id: str
    label: str
    local: bool
    base_url: str
    provider_id: str
    enabled: bool
    discovery: str
    deployment_id: str
    model: Optional[str]
    models: List[str]
    pricing: Optional[ProviderPricing]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Provider:
        pricing = d.get("pricing")
        return cls(
            id=_str(d["id"]),
            label=_str(d["label"]),
            local=_bool(d["local"]),
            base_url=_str(d["base_url"]),
            provider_id=_str(d["provider_id"]),
            enabled=_bool(d["enabled"]),
            discovery=_str(d["discovery"]),
            deployment_id=_str(d["deployment_id"]),
            model=_opt_str(d.get("model")),
            models=[_str(m) for m in (d.get("models") or [])],
            pricing=None if pricing is None else ProviderPricing.from_json(_obj(pricing)),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class Catalog(ItemList[Provider]):
    """The providers catalog (``GET /v1/providers/catalog``)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Catalog:
        return cls(items=_list(d.get("items"), Provider.from_json), raw=_raw(d))

    @property
    def providers(self) -> List[Provider]:
        """The providers (same as ``items``)."""
        return self.items

    def deployment(self, deployment_id: str) -> Optional[Provider]:
        """The provider of a deployment, or ``None``."""
        return next((p for p in self.items if p.deployment_id == deployment_id), None)


# ------------------------------------------------------------------------------------------------ tenants


@dataclass(frozen=True)
class Tenant(_Model):
    """A registered tenant: uuid ``id``, immutable ``slug``, display ``name``."""

    id: str
    slug: str
    name: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Tenant:
        return cls(id=_str(d["id"]), slug=_str(d["slug"]), name=_str(d["name"]), raw=_raw(d))


@dataclass(frozen=True)
class TenantList(ItemList[Tenant]):
    """Registered tenants, by slug."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TenantList:
        return cls(items=_list(d.get("items"), Tenant.from_json), raw=_raw(d))

    def get(self, key: str) -> Optional[Tenant]:
        """The tenant with this slug or id, or ``None``."""
        return next((t for t in self.items if key in (t.slug, t.id)), None)


@dataclass(frozen=True)
class TenantRef(_Model):
    """A tenant as ``whoami`` describes it (``slug`` and ``name`` are ``None`` for a tenant only seen in
    data)."""

    id: str
    slug: Optional[str]
    name: Optional[str]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TenantRef:
        return cls(id=_str(d["id"]), slug=_opt_str(d.get("slug")), name=_opt_str(d.get("name")), raw=_raw(d))


def _opt_tenant_ref(value: Any) -> Optional[TenantRef]:
    return None if value is None else TenantRef.from_json(_obj(value))


# ----------------------------------------------------------------------------------------------------- auth


@dataclass(frozen=True)
class WhoAmI(_Model):
    """The identity behind the API key: its public id, role, tenant (``None`` for platform identities) and
    the tenant a platform key is signed in to (``acting_tenant``)."""

    key_id: str
    role: str
    tenant_id: Optional[str]
    tenant: Optional[TenantRef]
    acting_tenant: Optional[TenantRef]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> WhoAmI:
        return cls(
            key_id=_str(d["key_id"]),
            role=_str(d["role"]),
            tenant_id=_opt_str(d.get("tenant_id")),
            tenant=_opt_tenant_ref(d.get("tenant")),
            acting_tenant=_opt_tenant_ref(d.get("acting_tenant")),
            raw=_raw(d),
        )


def _opt_str_list(value: Any) -> Optional[List[str]]:
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return [str(v) for v in value]


@dataclass(frozen=True)
class ApiKey(_Model):
    """An API key as listed: never its secret (``status``: ``active``, ``expired``, ``revoked``)."""

    id: str
    role: str
    tenant_id: Optional[str]
    name: Optional[str]
    status: str
    created_at: _dt.datetime
    expires_at: Optional[_dt.datetime] = None
    revoked_at: Optional[_dt.datetime] = None
    rotated_at: Optional[_dt.datetime] = None
    previous_secret_valid_until: Optional[_dt.datetime] = None
    nodes: Optional[List[str]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def _fields_from_json(cls, d: Mapping[str, Any]) -> Dict[str, Any]:
        return dict(
            id=_str(d["id"]),
            role=_str(d["role"]),
            tenant_id=_opt_str(d.get("tenant_id")),
            name=_opt_str(d.get("name")),
            status=_str(d["status"]),
            created_at=_instant(d["created_at"]),
            expires_at=_opt_instant(d.get("expires_at")),
            revoked_at=_opt_instant(d.get("revoked_at")),
            rotated_at=_opt_instant(d.get("rotated_at")),
            previous_secret_valid_until=_opt_instant(d.get("previous_secret_valid_until")),
            nodes=_opt_str_list(d.get("nodes")),
        )

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ApiKey:
        return cls(**cls._fields_from_json(d), raw=_raw(d))


@dataclass(frozen=True)
class ApiKeyCreated(ApiKey):
    """A key just created or rotated. ``key`` is the secret: shown in this answer only, and never in
    ``repr`` (nor is ``raw``)."""

    key: str = field(default="", repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ApiKeyCreated:
        return cls(**cls._fields_from_json(d), key=_str(d["key"]), raw=_raw(d))


@dataclass(frozen=True)
class ApiKeyList(ItemList[ApiKey]):
    """API keys (never their secrets)."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ApiKeyList:
        return cls(items=_list(d.get("items"), ApiKey.from_json), raw=_raw(d))

    def get(self, key_id: str) -> Optional[ApiKey]:
        """The key with this id, or ``None``."""
        return next((k for k in self.items if k.id == key_id), None)


# ----------------------------------------------------------------------------------------------------- audit


@dataclass(frozen=True)
class AuditEvent:
    """One link of the audit hash chain."""

    seq: int
    occurred_at: _dt.datetime
    actor: str
    actor_role: Optional[str]
    tenant_id: Optional[str]
    action: str
    decision: str
    resource: Optional[str]
    request_id: Optional[str]
    details: Dict[str, Any]
    prev_hash: str
    hash: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AuditEvent:
        details = d.get("details")
        return cls(
            seq=_int(d["seq"]),
            occurred_at=_instant(d["occurred_at"]),
            actor=_str(d["actor"]),
            actor_role=_opt_str(d.get("actor_role")),
            tenant_id=_opt_str(d.get("tenant_id")),
            action=_str(d["action"]),
            decision=_str(d["decision"]),
            resource=_opt_str(d.get("resource")),
            request_id=_opt_str(d.get("request_id")),
            details=dict(details) if isinstance(details, Mapping) else {},
            prev_hash=_str(d["prev_hash"]),
            hash=_str(d["hash"]),
            raw=_raw(d),
        )


@dataclass(frozen=True)
class AuditEventList(ItemList[AuditEvent]):
    """Audit events with ``seq > after``, oldest first. Page on with ``after=page.last_seq``."""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AuditEventList:
        return cls(items=_list(d.get("items"), AuditEvent.from_json), raw=_raw(d))

    @property
    def last_seq(self) -> Optional[int]:
        """The ``seq`` of the last event of the page (``None`` when empty): the next page's ``after``."""
        return self.items[-1].seq if self.items else None


@dataclass(frozen=True)
class AuditHead(_Model):
    """The newest event of the audit chain: anchor ``seq:hash`` outside the database."""

    seq: int
    hash: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AuditHead:
        return cls(seq=_int(d["seq"]), hash=_str(d["hash"]), raw=_raw(d))
