"""Payload builders shared by the tests (shapes of crates/api/tests/http.rs: ``sample``, ``usage_event``,
``worked_example_policy``)."""

from __future__ import annotations

import datetime as dt
import inspect
import uuid
from typing import Any, Awaitable, Dict, List, Optional, TypeVar, Union, cast

from enterprise_ai import Allocation, AllocationDeployment

T = TypeVar("T")

UTC = dt.timezone.utc


def unique(prefix: str) -> str:
    """A name no other test uses (the tests share one server)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def recent_hour(hours_ago: int = 3) -> dt.datetime:
    """The start of a whole UTC hour a few hours ago (recent: well within the raw retention)."""
    now = dt.datetime.now(UTC)
    return now.replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=hours_ago)


def ts(t: dt.datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def sample(
    gpu: str,
    deployment: str,
    end: Optional[dt.datetime],
    *,
    power_w: Union[int, str] = 400,
    utilization: Union[float, str] = 0.5,
    memory_used_gb: Union[float, str] = 20,
    tenant_id: Optional[str] = None,
    node: str = "gpu-node-3",
    window_seconds: int = 15,
) -> Dict[str, Any]:
    s: Dict[str, Any] = {
        "node": node,
        "gpu_uuid": gpu,
        "model": "H100-80GB",
        "namespace": "eai-inference",
        "pod": f"{deployment}-0",
        "deployment_id": deployment,
        "window_seconds": window_seconds,
        "utilization": utilization,
        "memory_used_gb": memory_used_gb,
        "power_w": power_w,
    }
    if end is not None:
        s["timestamp"] = ts(end)
    if tenant_id is not None:
        s["tenant_id"] = tenant_id
    return s


def hour_of_samples(gpu: str, deployment: str, hour: dt.datetime, **kwargs: Any) -> List[Dict[str, Any]]:
    """240 samples of 15 s covering ``[hour, hour + 1 h)``."""
    return [sample(gpu, deployment, hour + dt.timedelta(seconds=15 * k), **kwargs) for k in range(1, 241)]


def usage_event(
    deployment: str,
    at: dt.datetime,
    units: Dict[str, Any],
    *,
    tenant_id: Optional[str] = None,
    event_id: Optional[str] = None,
    usage_type: str = "llm_tokens",
    source: str = "gateway",
) -> Dict[str, Any]:
    e: Dict[str, Any] = {
        "usage_type": usage_type,
        "source": source,
        "occurred_at": ts(at),
        "deployment_id": deployment,
        "units": units,
    }
    if event_id is not None:
        e["event_id"] = event_id
        e["schema_version"] = "1.0"
    if tenant_id is not None:
        e["tenant_id"] = tenant_id
    return e


def policy(pattern: str, **overrides: Any) -> Dict[str, Any]:
    """The worked example's policy, on a deployment pattern of the test's own."""
    p: Dict[str, Any] = {
        "name": f"policy {pattern}",
        "deployment_pattern": pattern,
        "currency": "EUR",
        "gpu_hourly_cost": "2.10",
        "overhead_pct": "18",
        "energy_kwh_price": "0.21",
        "pue": "1.4",
        "effective_from": "2020-01-01",
    }
    p.update(overrides)
    return p


def deployment_row(allocation: Allocation, deployment: str) -> AllocationDeployment:
    row = allocation.deployment(deployment)
    assert row is not None, f"no row for {deployment} in {[d.deployment_id for d in allocation.deployments]}"
    return row


async def maybe(value: Union[Awaitable[T], T]) -> T:
    """Awaits an awaitable (async client), passes anything else through (sync client)."""
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value
