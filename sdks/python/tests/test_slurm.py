"""Slurm's accounting beside what was measured (``finops.gpu_slurm_reconciliation``) against the real
server, with a real ``sacct --json`` capture (``tests/fixtures/sacct.json``, Slurm 22.05): job 1 (account
physics) held 2 GPUs and job 2 (account bio) 1 GPU, both for the 20 s from ``time.start`` to ``time.end``.
The samplers' pods ``job-1`` / ``job-2`` measured them busy 90 % and 2 %: job 1 ``ok``, job 2 ``idle``.

A server of its own, so that the period holds only this module's samples.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from enterprise_ai import (
    AsyncEnterpriseAI,
    EnterpriseAI,
    Money,
    PermissionDeniedError,
    SlurmJobLine,
    SlurmReconciliation,
    ValidationError,
)
from enterprise_ai._operations import _decimal_param

from _server import EaiServer
from conftest import ServerFactory
from helpers import policy, ts

SACCT_PATH = Path(__file__).parent / "fixtures" / "sacct.json"

World = Tuple[EnterpriseAI, EaiServer, Dict[str, Any], dt.datetime, dt.datetime]


def _sacct() -> Dict[str, Any]:
    doc: Dict[str, Any] = json.loads(SACCT_PATH.read_text("utf-8"))
    return doc


def _job_samples(started: dt.datetime) -> List[Dict[str, Any]]:
    """5 s windows ending 5, 10, 15 and 20 s after the jobs started: GPU-0 and GPU-1 of job 1 (physics, 90 %
    busy), GPU-2 of job 2 (bio, 2 %)."""
    out: List[Dict[str, Any]] = []
    for k in range(1, 5):
        end = started + dt.timedelta(seconds=5 * k)
        for gpu, job, account, utilization in (
            ("GPU-0", 1, "physics", "0.9"),
            ("GPU-1", 1, "physics", "0.9"),
            ("GPU-2", 2, "bio", "0.02"),
        ):
            out.append(
                {
                    "node": "slurm-node-1",
                    "gpu_uuid": gpu,
                    "model": "H100-80GB",
                    "namespace": account,
                    "pod": f"job-{job}",
                    "deployment_id": "slurm/gpu",
                    "window_seconds": 5,
                    "utilization": utilization,
                    "memory_used_gb": 10,
                    "power_w": 300,
                    "timestamp": ts(end),
                }
            )
    return out


@pytest.fixture(scope="module")
def world(make_server: ServerFactory) -> Iterator[World]:
    srv = make_server(name="slurm")
    sacct = _sacct()
    started = dt.datetime.fromtimestamp(sacct["jobs"][0]["time"]["start"], dt.timezone.utc)
    hour = started.replace(minute=0, second=0, microsecond=0)
    with EnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as c:
        c.finops.create_allocation_policy(policy("slurm/*"))
        result = c.finops.gpu_samples(_job_samples(started))
        assert result.accepted == 12
        yield c, srv, sacct, hour, hour + dt.timedelta(hours=1)


def _check(r: SlurmReconciliation, start: dt.datetime, end: dt.datetime) -> None:
    assert isinstance(r, SlurmReconciliation)
    assert (r.from_, r.to, r.idle_below) == (start, end, Decimal("0.1"))
    assert r.allocated_gpu_seconds == Decimal(60) and r.measured_gpu_seconds == Decimal(60)
    assert [j.job_id for j in r.jobs] == ["1", "2"]
    one, two = r.jobs
    assert isinstance(one, SlurmJobLine)
    assert (one.account, one.user, one.partition, one.state) == ("physics", "root", "gpu", "COMPLETED")
    assert (one.deployment_id, one.gpus, one.status) == ("slurm/gpu", 2, "ok")
    assert (one.allocated_gpu_seconds, one.measured_gpu_seconds) == (Decimal(40), Decimal(40))
    assert (one.busy_gpu_seconds, one.busy_share) == (Decimal(36), Decimal("0.9"))
    assert (two.account, two.gpus, two.status) == ("bio", 1, "idle")
    assert (two.allocated_gpu_seconds, two.measured_gpu_seconds) == (Decimal(20), Decimal(20))
    assert two.busy_share == Decimal("0.02")
    assert all(
        isinstance(x, Decimal)
        for j in r.jobs
        for x in (j.allocated_gpu_seconds, j.measured_gpu_seconds, j.busy_gpu_seconds, j.busy_share)
    )
    # Both priced; the idle cost is the idle job's.
    assert [m.currency for j in r.jobs for m in j.cost] == ["EUR", "EUR"]
    assert one.amount("EUR") > 0 and two.amount("EUR") > 0 and one.amount("USD") == Decimal(0)
    assert r.idle_cost == two.cost and all(isinstance(m, Money) for m in r.idle_cost)
    assert r.idle_amount("EUR") == two.amount("EUR")
    assert r.with_status("idle") == [two] and r.with_status("not_measured") == []
    assert r.job(1) is one and r.job("2") is two and r.job(3) is None


def test_a_busy_job_is_ok_and_an_idle_one_is_idle(world: World) -> None:
    c, _, sacct, start, end = world
    _check(c.finops.gpu_slurm_reconciliation(sacct, start=start, end=end), start, end)


def test_the_document_as_text_or_bytes_is_sent_as_it_is(world: World) -> None:
    c, _, sacct, start, end = world
    text = SACCT_PATH.read_text("utf-8")
    by_text = c.finops.gpu_slurm_reconciliation(text, start=start, end=end)
    _check(by_text, start, end)
    assert c.finops.gpu_slurm_reconciliation(text.encode("utf-8"), start=start, end=end) == by_text
    assert c.finops.gpu_slurm_reconciliation(sacct, start=start, end=end) == by_text


def test_idle_below_moves_the_threshold(world: World) -> None:
    c, _, sacct, start, end = world
    # Under 1 %: the bio job is busy enough.
    r = c.finops.gpu_slurm_reconciliation(sacct, start=start, end=end, idle_below=Decimal("0.01"))
    assert r.idle_below == Decimal("0.01")
    assert [j.status for j in r.jobs] == ["ok", "ok"] and r.idle_cost == []
    # Under 95 %: both idle, and the idle cost is the two jobs'.
    r = c.finops.gpu_slurm_reconciliation(sacct, start=start, end=end, idle_below="0.95")
    assert [j.status for j in r.jobs] == ["idle", "idle"]
    assert r.idle_amount("EUR") == sum((j.amount("EUR") for j in r.jobs), Decimal(0))


def test_an_idle_below_out_of_range_is_a_validation_error(world: World) -> None:
    c, _, sacct, start, end = world
    with pytest.raises(ValidationError) as caught:
        c.finops.gpu_slurm_reconciliation(sacct, start=start, end=end, idle_below=2)
    assert caught.value.status == 422
    assert [d.field for d in caught.value.details] == ["idle_below"]


def test_a_document_without_jobs_is_a_validation_error(world: World) -> None:
    c, _, _, start, end = world
    with pytest.raises(ValidationError) as caught:
        c.finops.gpu_slurm_reconciliation({"meta": {}}, start=start, end=end)
    assert [d.field for d in caught.value.details] == ["body"]
    with pytest.raises(ValidationError) as caught:
        c.finops.gpu_slurm_reconciliation("not json", start=start, end=end)
    assert [d.field for d in caught.value.details] == ["body"]
    with pytest.raises(TypeError):
        c.finops.gpu_slurm_reconciliation(SACCT_PATH, start=start, end=end)  # type: ignore[arg-type]


def test_a_job_outside_the_period_is_left_out(world: World) -> None:
    c, _, sacct, start, _ = world
    before = start - dt.timedelta(hours=1)
    r = c.finops.gpu_slurm_reconciliation(sacct, start=before, end=start)
    assert r.jobs == [] and r.allocated_gpu_seconds == Decimal(0) and r.idle_cost == []


def test_the_async_client_reconciles_the_same(world: World) -> None:
    c, srv, sacct, start, end = world

    async def run() -> SlurmReconciliation:
        async with AsyncEnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as a:
            with pytest.raises(ValidationError):
                await a.finops.gpu_slurm_reconciliation(sacct, start=start, end=end, idle_below="1.5")
            return await a.finops.gpu_slurm_reconciliation(sacct, start=start, end=end)

    assert asyncio.run(run()) == c.finops.gpu_slurm_reconciliation(sacct, start=start, end=end)


def test_the_idle_below_parameter() -> None:
    assert _decimal_param(None, "idle_below") is None
    assert _decimal_param(Decimal("0.10"), "idle_below") == "0.10"
    assert _decimal_param(Decimal("1E-1"), "idle_below") == "0.1"
    assert _decimal_param(0.05, "idle_below") == "0.05"
    assert _decimal_param(1, "idle_below") == "1"
    assert _decimal_param("0.2", "idle_below") == "0.2"
    with pytest.raises(TypeError):
        _decimal_param(True, "idle_below")
    with pytest.raises(ValueError):
        _decimal_param("", "idle_below")


def test_a_tenant_sees_the_jobs_of_its_dedicated_deployments_only(world: World) -> None:
    c, srv, sacct, start, end = world
    acme = c.tenants.create(slug="slurm-acme", name="Acme")
    key = c.auth.create_api_key(role="viewer", tenant_id=acme.id, name="slurm acme").key
    with EnterpriseAI(base_url=srv.url, api_key=key) as mine:
        # Both jobs ran on shared GPUs (no Slurm account is the tenant's): none is acme's.
        r = mine.finops.gpu_slurm_reconciliation(sacct, start=start, end=end)
        assert r.jobs == [] and r.idle_cost == []
    # A sampler writes samples, never reads them.
    sampler = c.auth.create_api_key(role="sampler", name="slurm sampler").key
    with EnterpriseAI(base_url=srv.url, api_key=sampler) as writer:
        with pytest.raises(PermissionDeniedError):
            writer.finops.gpu_slurm_reconciliation(sacct, start=start, end=end)
