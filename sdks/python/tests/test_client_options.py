"""The raw-request escape hatch, the logging hook, per-request options and the service calls, against a real
server (through the test proxy where a fault is needed)."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from typing import Any, List

import httpx
import pytest

from enterprise_ai import AsyncEnterpriseAI, EnterpriseAI, NotFoundError, ValidationError

from _server import EaiServer, FaultProxy
from helpers import recent_hour, sample, unique


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_raw_request_has_the_clients_auth_retries_and_errors(proxy: FaultProxy, server: EaiServer) -> None:
    slug = unique("raw")
    with EnterpriseAI(base_url=proxy.url, api_key=server.admin_key, retry_base_delay=0.01) as c:
        created: Any = c.request("POST", "/v1/tenants", json={"slug": slug, "name": "Raw"})
        assert created["slug"] == slug
        proxy.fail(times=1, status=503, code="unavailable", method="GET")
        listed: Any = c.request("GET", "/v1/tenants")
        assert slug in [t["slug"] for t in listed["items"]]
        one: Any = c.request("GET", f"/v1/tenants/{slug}")
        assert one["id"] == created["id"]
        with pytest.raises(NotFoundError):
            c.request("GET", "/v1/tenants/no-such-tenant-here")
        with pytest.raises(ValidationError):
            c.request("POST", "/v1/finops/allocation-policies", json={"name": "x"})
    assert [s.status for s in proxy.requests("GET", "/v1/tenants")][:2] == [503, 200]


def test_service_calls(admin: EnterpriseAI) -> None:
    assert admin.healthz() is not None
    assert admin.readyz() is not None
    assert "# TYPE" in admin.metrics() or "# HELP" in admin.metrics()
    doc: Any = admin.openapi()
    assert doc["openapi"].startswith("3.")


async def test_async_raw_request(server: EaiServer) -> None:
    async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key) as c:
        me: Any = await c.request("GET", "/v1/auth/whoami")
        assert me["role"] == "platform_admin"
        assert (await c.openapi())["paths"]


def test_each_attempt_is_logged_without_secrets(proxy: FaultProxy, server: EaiServer) -> None:
    log = logging.getLogger(f"test.sdk.{unique('log')}")
    log.setLevel(logging.DEBUG)
    handler = Records()
    log.addHandler(handler)
    proxy.fail(times=1, status=503, code="unavailable", method="GET")
    with EnterpriseAI(base_url=proxy.url, api_key=server.admin_key, retry_base_delay=0.01, logger=log) as c:
        c.tenants.list()
    messages = [r.getMessage() for r in handler.records]
    assert len(messages) == 2, messages
    assert "GET /v1/tenants -> 503 (attempt 1)" in messages[0] and " in 0." in messages[0]
    assert "GET /v1/tenants -> 200 (attempt 2)" in messages[1]
    assert all(server.admin_key not in m for m in messages)


def test_the_enterprise_ai_logger_is_the_default(
    proxy: FaultProxy, server: EaiServer, caplog: pytest.LogCaptureFixture
) -> None:
    proxy.fail(times=1, status=500, code="internal", method="GET")
    with caplog.at_level(logging.DEBUG, logger="enterprise_ai"):
        with EnterpriseAI(base_url=proxy.url, api_key=server.admin_key, retry_base_delay=0.01) as c:
            c.auth.whoami()
    ours = [r for r in caplog.records if r.name == "enterprise_ai"]
    assert [r.levelno for r in ours] == [logging.WARNING, logging.DEBUG]
    assert "GET /v1/auth/whoami -> 500 (attempt 1)" in ours[0].getMessage()


def test_per_request_headers_and_keys(server: EaiServer) -> None:
    sent: List[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [sent.append]})
    with EnterpriseAI(base_url=server.url, api_key=server.admin_key, http_client=http) as c:
        tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        scoped = c.with_options(traceparent=tp, extra_headers={"X-Debug": "1"}, idempotency_key=unique("key"))
        tenant = scoped.tenants.create(slug=unique("hdr"), name="Headers")
        assert (
            tenant.request_id
            and sent[-1].headers["idempotency-key"] == scoped._config.request.idempotency_key
        )
        assert sent[-1].headers["traceparent"] == tp and sent[-1].headers["x-debug"] == "1"
        assert sent[-1].headers["user-agent"].startswith("eai-gpu-sdk-python/")
        c.tenants.list()  # the first client is unchanged; a GET carries no key
        assert "traceparent" not in sent[-1].headers and "idempotency-key" not in sent[-1].headers
        c.tenants.create(slug=unique("hdr"), name="Headers 2")  # a fresh UUID v4 per call
        assert uuid.UUID(sent[-1].headers["idempotency-key"]).version == 4
    http.close()


def test_a_callers_key_on_a_batched_ingest_names_each_part(server: EaiServer) -> None:
    sent: List[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [sent.append]})
    gpu = unique("GPU-key")
    samples = [sample(gpu, unique("dep"), recent_hour(2) + dt.timedelta(seconds=15 * i)) for i in range(5)]
    with EnterpriseAI(base_url=server.url, api_key=server.admin_key, http_client=http, max_batch_size=2) as c:
        key = unique("batch")
        result = c.with_options(idempotency_key=key).finops.gpu_samples(samples=samples)
    http.close()
    assert result.accepted == 5 and result.requests == 3 and result.request_id
    assert [r.headers["idempotency-key"] for r in sent] == [key, f"{key}-2", f"{key}-3"]
