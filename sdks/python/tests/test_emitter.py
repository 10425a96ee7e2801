"""The usage Emitter: background batching, flush/close, at-least-once delivery with stable ids.

Each test measures what the server stored through the allocation: every event claims 1 GPU-second of a
shared deployment that ran a whole hour (3,600 GPU-seconds), so the tenant's GPU-seconds on it are exactly
the number of distinct events stored -- a duplicate would show.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from enterprise_ai import AsyncEnterpriseAI, EnterpriseAI, EnterpriseAIError, Tenant, ValidationError
from enterprise_ai.usage import Emitter, EmitterQueueFullError

from _server import EaiServer, FaultProxy, free_port
from helpers import hour_of_samples, policy, recent_hour, ts, unique

EVENTS = "/v1/usage/events"


def world(admin: EnterpriseAI, tenant: Tenant) -> Tuple[str, dt.datetime, Dict[str, Any]]:
    """A priced shared deployment with an hour of samples; the emitter defaults for it."""
    deployment = unique("emit")
    hour = recent_hour(8)
    admin.finops.gpu_samples(hour_of_samples(unique("GPU"), deployment, hour))
    admin.finops.create_allocation_policy(policy(deployment))
    defaults = {
        "source": "worker",
        "usage_type": "gpu_time",
        "tenant_id": tenant.id,
        "deployment_id": deployment,
        "occurred_at": ts(hour + dt.timedelta(minutes=30)),
    }
    return deployment, hour, defaults


def stored(admin: EnterpriseAI, tenant: Tenant, deployment: str, hour: dt.datetime) -> Decimal:
    """GPU-seconds the tenant's stored events claim on the deployment (= distinct events stored)."""
    allocation = admin.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
    items = allocation.items_for(tenant_id=tenant.id, deployment_id=deployment)
    return sum((i.gpu_seconds for i in items), Decimal(0))


def test_worker_events_delivered_once(admin: EnterpriseAI, tenants: Dict[str, Tenant]) -> None:
    acme = tenants["acme"]
    deployment, hour, defaults = world(admin, acme)
    n = 300
    ids: List[str] = []
    emitter = Emitter(admin, batch_size=50, flush_interval=0.2, defaults=defaults)

    def worker() -> None:
        for _ in range(n):
            ids.append(emitter.emit(units={"gpu_seconds": 1}))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert len(set(ids)) == n
    assert emitter.close(timeout=30) is True
    stats = emitter.stats
    assert (stats.emitted, stats.delivered, stats.failed, stats.pending, stats.dropped) == (n, n, 0, 0, 0)
    assert stats.requests >= n // 50
    assert emitter.closed and "closed" in repr(emitter)
    assert stored(admin, acme, deployment, hour) == n
    with pytest.raises(RuntimeError, match="closed"):
        emitter.emit(units={"gpu_seconds": 1})
    assert emitter.close() is True  # idempotent


def test_flush_and_context_manager(admin: EnterpriseAI, tenants: Dict[str, Tenant]) -> None:
    globex = tenants["globex"]
    deployment, hour, defaults = world(admin, globex)
    with Emitter(admin, batch_size=1000, flush_interval=60, defaults=defaults) as emitter:
        for _ in range(10):
            emitter.emit({"units": {"gpu_seconds": 2}})
        assert emitter.stats.delivered == 0  # neither the size nor the interval is reached
        assert emitter.flush(timeout=10) is True
        assert emitter.stats.delivered == 10 and emitter.stats.requests == 1
        assert stored(admin, globex, deployment, hour) == 20
        emitter.emit(units={"gpu_seconds": 2})
    assert emitter.stats.delivered == 11
    assert stored(admin, globex, deployment, hour) == 22


def test_failed_batches_are_retried_with_the_same_ids(
    proxy: FaultProxy, server: EaiServer, admin: EnterpriseAI, tenants: Dict[str, Tenant]
) -> None:
    """The first delivery reaches the server but its answer is lost (503 after forwarding); the second is
    refused outright (503). The emitter keeps the batch and sends it again with the same event ids: nothing
    is lost, nothing is counted twice."""
    acme = tenants["acme"]
    deployment, hour, defaults = world(admin, acme)
    proxy.fail(times=1, status=503, code="unavailable", forward=True, method="POST", path_prefix=EVENTS)
    proxy.fail(times=1, status=503, code="unavailable", method="POST", path_prefix=EVENTS)
    with EnterpriseAI(base_url=proxy.url, api_key=server.admin_key, max_retries=0) as through_proxy:
        emitter = Emitter(
            through_proxy, batch_size=40, flush_interval=0.1, retry_base_delay=0.05, defaults=defaults
        )
        for _ in range(120):
            emitter.emit(units={"gpu_seconds": 1})
        assert emitter.close(timeout=30) is True
    stats = emitter.stats
    assert stats.delivered == 120 and stats.retries == 2 and stats.failed == 0
    statuses = [s.status for s in proxy.requests("POST", EVENTS)]
    assert statuses[:2] == [503, 503] and statuses.count(200) == stats.requests
    assert stored(admin, acme, deployment, hour) == 120  # the forwarded-then-lost batch is not doubled


async def test_emitter_with_async_client(
    server: EaiServer, admin: EnterpriseAI, tenants: Dict[str, Tenant]
) -> None:
    acme = tenants["acme"]
    deployment, hour, defaults = world(admin, acme)
    async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key) as client:
        emitter = Emitter(client, batch_size=5, flush_interval=0.1, defaults=defaults)
        for _ in range(12):
            emitter.emit(units={"gpu_seconds": 3})
        assert await emitter.aflush(timeout=10) is True
        assert await emitter.aclose() is True
    assert emitter.stats.delivered == 12
    assert stored(admin, acme, deployment, hour) == 36


def test_refused_events_are_reported_and_the_rest_delivered(
    admin: EnterpriseAI, tenants: Dict[str, Tenant]
) -> None:
    acme = tenants["acme"]
    deployment, hour, defaults = world(admin, acme)
    refused: List[Tuple[EnterpriseAIError, List[Dict[str, Any]]]] = []
    with Emitter(
        admin,
        batch_size=10,
        flush_interval=0.1,
        defaults=defaults,
        on_error=lambda e, evs: refused.append((e, evs)),
    ) as emitter:
        good = [emitter.emit(units={"gpu_seconds": 1}) for _ in range(3)]
        bad = emitter.emit(units={"Not A Unit": 1})
        good += [emitter.emit(units={"gpu_seconds": 1}) for _ in range(2)]
    assert len(refused) == 1
    error, events = refused[0]
    assert isinstance(error, ValidationError) and error.indexes == [3]
    assert [e["event_id"] for e in events] == [bad]
    stats = emitter.stats
    assert (stats.delivered, stats.failed, stats.pending) == (5, 1, 0)
    assert stored(admin, acme, deployment, hour) == 5


def test_queue_full_policies() -> None:
    unreachable = f"http://127.0.0.1:{free_port()}"
    event = {"source": "worker", "usage_type": "llm_tokens", "units": {"tokens_in": 1}}
    with EnterpriseAI(base_url=unreachable, api_key="eai_live_" + "q" * 30, max_retries=0) as c:
        raising = Emitter(c, batch_size=2, max_queue_size=2, on_full="raise", flush_interval=0.05)
        raising.emit(event)
        raising.emit(event)
        with pytest.raises(EmitterQueueFullError):
            raising.emit(event)
        assert raising.close(timeout=0.3) is False  # undeliverable: kept, reported
        pending = raising.pending_events()
        assert len(pending) == 2 and all(e["event_id"] and e["schema_version"] == "1.0" for e in pending)

        dropping = Emitter(c, batch_size=2, max_queue_size=2, on_full="drop", flush_interval=0.05)
        for _ in range(5):
            dropping.emit(event)
        assert dropping.stats.dropped == 3 and dropping.stats.emitted == 2
        dropping.close(timeout=0.1)

        blocking = Emitter(c, batch_size=2, max_queue_size=2, block_timeout=0.3, flush_interval=0.05)
        blocking.emit(event)
        blocking.emit(event)
        t0 = time.monotonic()
        with pytest.raises(EmitterQueueFullError):
            blocking.emit(event)
        assert time.monotonic() - t0 >= 0.25
        blocking.close(timeout=0.1)


def test_emit_checks_and_options(admin: EnterpriseAI) -> None:
    with Emitter(admin) as emitter:
        with pytest.raises(ValueError, match="usage_type"):
            emitter.emit(source="worker", units={})
        with pytest.raises(TypeError):
            emitter.emit(["not", "a", "mapping"])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Emitter(admin, on_full="explode")
    with pytest.raises(ValueError):
        Emitter(admin, batch_size=0)


def test_atexit_flushes(
    server: EaiServer, admin: EnterpriseAI, tenants: Dict[str, Tenant], tmp_path: Path
) -> None:
    """A worker that never calls close(): the atexit hook delivers its events before the process ends."""
    globex = tenants["globex"]
    deployment, hour, defaults = world(admin, globex)
    script = textwrap.dedent(
        f"""\
        from enterprise_ai import EnterpriseAI
        from enterprise_ai.usage import Emitter

        client = EnterpriseAI(base_url={server.url!r}, api_key={server.admin_key!r})
        emitter = Emitter(client, batch_size=1000, flush_interval=60, defaults={defaults!r})
        for _ in range(25):
            emitter.emit(units={{"gpu_seconds": 1}})
        print("exiting with", emitter.stats.pending, "pending")
        """
    )
    path = tmp_path / "worker.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EAI_")}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "exiting with 25 pending" in proc.stdout
    assert stored(admin, globex, deployment, hour) == 25
