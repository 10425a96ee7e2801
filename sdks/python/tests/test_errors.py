"""Every error class, from real server answers (and, for 500/503 and codes the server cannot be made to
send, from the fault proxy in front of it)."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any, Dict

import httpx
import pytest

from enterprise_ai import (
    APIConnectionError,
    APITimeoutError,
    AsyncEnterpriseAI,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    EnterpriseAI,
    EnterpriseAIError,
    FieldError,
    InternalServerError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    SampleIngestResult,
    ServiceUnavailableError,
    Tenant,
    TenantRequiredError,
    ValidationError,
    _core,
)

from _server import EaiServer, FaultProxy, free_port
from conftest import KeyFactory, ServerFactory
from helpers import recent_hour, sample, unique


def assert_envelope(err: EnterpriseAIError, status: int, code: str) -> None:
    assert err.status == status, repr(err)
    assert err.code == code, repr(err)
    assert err.message and err.message == err.message_i18n["en"]
    assert set(err.message_i18n) >= {"en", "fr"} and err.message_i18n["fr"]
    assert err.request_id and err.request_id == err.headers.get("x-request-id")
    assert str(err).startswith(f"[{code}] ") and err.request_id in str(err)


def test_401_unknown_key(server: EaiServer) -> None:
    with EnterpriseAI(base_url=server.url, api_key="eai_live_" + "x" * 40, max_retries=0) as c:
        with pytest.raises(AuthenticationError) as info:
            c.auth.whoami()
    assert_envelope(info.value, 401, "unauthorized")
    assert info.value.details == []


def test_403_role(server: EaiServer, new_key: KeyFactory, tenants: Dict[str, Tenant]) -> None:
    viewer = EnterpriseAI(base_url=server.url, api_key=new_key("viewer", tenants["acme"].id), max_retries=0)
    with pytest.raises(PermissionDeniedError) as info:
        viewer.finops.create_allocation_policy(name="nope", gpu_hourly_cost="1")
    assert_envelope(info.value, 403, "forbidden")
    assert not isinstance(info.value, TenantRequiredError)
    viewer.close()


def test_403_tenant_key_naming_another_tenant(
    server: EaiServer, new_key: KeyFactory, tenants: Dict[str, Tenant]
) -> None:
    key = new_key("viewer", tenants["acme"].id)
    with EnterpriseAI(base_url=server.url, api_key=key, tenant="globex", max_retries=0) as c:
        with pytest.raises(PermissionDeniedError) as info:
            c.tenants.list()
    assert_envelope(info.value, 403, "forbidden")
    with EnterpriseAI(base_url=server.url, api_key=key, tenant="acme") as own:
        assert [t.slug for t in own.tenants.list()] == ["acme"]


def test_404_unknown_tenant_slug_and_policy(admin: EnterpriseAI) -> None:
    with pytest.raises(NotFoundError) as info:
        admin.with_options(tenant="no-such-tenant").finops.gpu_allocation()
    assert_envelope(info.value, 404, "not_found")
    assert "no-such-tenant" in info.value.message
    with pytest.raises(NotFoundError):
        admin.tenants.get("no-such-tenant")
    with pytest.raises(NotFoundError) as p:
        admin.finops.disable_allocation_policy("alp_999999")
    assert_envelope(p.value, 404, "not_found")
    with pytest.raises(NotFoundError):
        admin.finops.supersede_allocation_policy("alp_999999", gpu_hourly_cost="1")
    with pytest.raises(NotFoundError):
        admin.auth.revoke_api_key("key_999999")


def test_405_method_not_allowed(admin: EnterpriseAI) -> None:
    # No SDK method sends a wrong method: drive the shared request operation directly.
    op = _core.call(admin._config, "DELETE", "/v1/tenants", lambda d: d)
    with pytest.raises(MethodNotAllowedError) as info:
        admin._run(op)
    assert_envelope(info.value, 405, "method_not_allowed")
    assert "GET" in info.value.headers.get("allow", "")


def test_409_conflicts(admin: EnterpriseAI, tenants: Dict[str, Tenant]) -> None:
    with pytest.raises(ConflictError) as info:
        admin.tenants.create(slug="acme", name="Acme again")
    assert_envelope(info.value, 409, "conflict")
    key = admin.auth.create_api_key(role="viewer", tenant_id=tenants["acme"].id)
    admin.auth.revoke_api_key(key.id)
    with pytest.raises(ConflictError):
        admin.auth.rotate_api_key(key.id)


def test_413_payload_too_large(small_batch_server: EaiServer) -> None:
    deployment = unique("big413")
    start = recent_hour(10)
    samples = [sample("GPU-413", deployment, start + dt.timedelta(seconds=15 * k)) for k in range(1, 3002)]
    with EnterpriseAI(
        base_url=small_batch_server.url,
        api_key=small_batch_server.admin_key,
        max_batch_size=10_000,
        split_on_payload_too_large=False,
    ) as c:
        with pytest.raises(PayloadTooLargeError) as info:
            c.finops.gpu_samples(samples)
        assert_envelope(info.value, 413, "payload_too_large")
        assert "3000" in info.value.message
        partial = info.value.partial_result
        assert isinstance(partial, SampleIngestResult) and partial.accepted == 0 and partial.requests == 0
        # Nothing of the refused batch was stored.
        row = c.finops.gpu_allocation(start=start, end=start + dt.timedelta(hours=24)).deployment(deployment)
        assert row is None


def test_422_details(admin: EnterpriseAI) -> None:
    deployment = unique("bad")
    start = recent_hour(5)
    samples = [sample(unique("GPU"), deployment, start + dt.timedelta(seconds=15 * k)) for k in range(1, 7)]
    samples[4]["utilization"] = 2
    samples[5]["colour"] = "blue"
    with pytest.raises(ValidationError) as info:
        admin.finops.gpu_samples(samples)
    err = info.value
    assert_envelope(err, 422, "validation_error")
    assert err.fields == ["utilization", "colour"]
    assert err.indexes == [4, 5]
    assert err.errors_for("utilization")[0].index == 4
    assert all(isinstance(d, FieldError) and d.reason for d in err.details)

    # Batched, the indexes are those of the caller's list, and the batches before were stored.
    with pytest.raises(ValidationError) as batched:
        admin.finops.gpu_samples(samples, batch_size=2)
    assert batched.value.indexes == [4, 5]
    partial = batched.value.partial_result
    assert isinstance(partial, SampleIngestResult)
    assert (partial.accepted, partial.requests) == (4, 2)

    # A single object's field has no index.
    with pytest.raises(ValidationError) as single:
        admin.finops.create_allocation_policy(name="no cost")
    assert single.value.fields == ["gpu_hourly_cost"] and single.value.details[0].index is None


def test_429_rate_limited(make_server: ServerFactory) -> None:
    limited = make_server(name="ratelimited", EAI_RATE_LIMIT_PER_KEY="1")
    with EnterpriseAI(base_url=limited.url, api_key=limited.admin_key, max_retries=0) as c:
        with pytest.raises(RateLimitError) as info:
            for _ in range(10):
                c.auth.whoami()
        err = info.value
        assert_envelope(err, 429, "rate_limited")
        assert err.retry_after is not None and err.retry_after >= 1
        # With retries, the same burst succeeds: the SDK waits Retry-After.
        retrying = c.with_options(max_retries=5)
        t0 = time.monotonic()
        for _ in range(4):
            assert retrying.auth.whoami().role == "platform_admin"
        assert time.monotonic() - t0 >= 0.9


def test_500_and_503_from_the_proxy(proxy: FaultProxy, server: EaiServer) -> None:
    with EnterpriseAI(base_url=proxy.url, api_key=server.admin_key, max_retries=0) as c:
        proxy.fail(status=500, code="internal")
        with pytest.raises(InternalServerError) as internal:
            c.tenants.list()
        assert internal.value.status == 500 and internal.value.code == "internal"
        assert internal.value.request_id and internal.value.request_id.startswith("proxy-")
        proxy.fail(status=503, code="unavailable", headers={"Retry-After": "7"})
        with pytest.raises(ServiceUnavailableError) as unavailable:
            c.tenants.list()
        assert unavailable.value.status == 503 and unavailable.value.retry_after == 7
        assert c.tenants.list() is not None  # the proxy relays again


def test_codes_the_server_cannot_be_made_to_send(proxy: FaultProxy, server: EaiServer) -> None:
    """tenant_required (unreachable through the API: a tenant role's key always has a tenant), an unknown
    code (mapped by status), a non-JSON gateway error."""
    with EnterpriseAI(base_url=proxy.url, api_key=server.admin_key, max_retries=0) as c:
        proxy.fail(status=403, code="tenant_required")
        with pytest.raises(TenantRequiredError) as tr:
            c.tenants.list()
        assert isinstance(tr.value, PermissionDeniedError) and tr.value.code == "tenant_required"

        proxy.fail(status=404, code="gone_fishing")  # an unknown code: the base class, whatever the status
        with pytest.raises(EnterpriseAIError) as nf:
            c.tenants.list()
        assert type(nf.value) is EnterpriseAIError and nf.value.code == "gone_fishing"
        assert nf.value.status == 404 and nf.value.body["error"]["code"] == "gone_fishing"

        proxy.fail(status=418, code="teapot")
        with pytest.raises(EnterpriseAIError) as base:
            c.tenants.list()
        assert type(base.value) is EnterpriseAIError and base.value.status == 418
        assert base.value.code == "teapot"

        proxy.fail(status=502, body=b"<html>bad gateway</html>", headers={"Content-Type": "text/html"})
        with pytest.raises(EnterpriseAIError) as gateway:
            c.tenants.list()
        assert gateway.value.status == 502 and gateway.value.code == "http_502"
        assert "bad gateway" in gateway.value.message

        proxy.fail(status=200, body=b"not json")
        with pytest.raises(EnterpriseAIError) as invalid:
            c.tenants.list()
        assert invalid.value.code == "invalid_response"


def test_transport_errors(proxy: FaultProxy, server: EaiServer) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    with EnterpriseAI(base_url=closed, api_key=server.admin_key, max_retries=1, retry_base_delay=0.01) as c:
        with pytest.raises(APIConnectionError) as conn:
            c.auth.whoami()
    assert conn.value.status is None and conn.value.code == "connection_error"
    assert isinstance(conn.value.__cause__, httpx.ConnectError)

    proxy.fail(delay=1.0, status=200)
    with EnterpriseAI(base_url=proxy.url, api_key=server.admin_key, timeout=0.3, max_retries=0) as c:
        with pytest.raises(APITimeoutError) as timeout:
            c.auth.whoami()
    assert isinstance(timeout.value, APIConnectionError) and timeout.value.code == "timeout"


async def test_async_errors(server: EaiServer) -> None:
    async with AsyncEnterpriseAI(base_url=server.url, api_key="eai_live_" + "y" * 40, max_retries=0) as c:
        with pytest.raises(AuthenticationError):
            await c.auth.whoami()
    async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key) as c:
        with pytest.raises(NotFoundError):
            await c.tenants.get("no-such-tenant")
        with pytest.raises(ValidationError) as info:
            await c.finops.create_allocation_policy({"name": "local-gpu-default", "deployment_pattern": "*"})
        assert info.value.fields == ["gpu_hourly_cost"]


def test_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EAI_API_KEY", raising=False)
    monkeypatch.delenv("EAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="EAI_API_KEY"):
        EnterpriseAI(base_url="http://127.0.0.1:1")
    with pytest.raises(ConfigurationError, match="EAI_BASE_URL"):
        EnterpriseAI(api_key="eai_live_abc")
    with pytest.raises(ConfigurationError):
        EnterpriseAI(base_url="ftp://x", api_key="eai_live_abc")
    with pytest.raises(ValueError):  # ConfigurationError is a ValueError too
        EnterpriseAI(base_url="http://x", api_key="eai_live_abc", max_retries=-1)
    monkeypatch.setenv("EAI_API_KEY", "eai_live_fromenv")
    monkeypatch.setenv("EAI_BASE_URL", "http://127.0.0.1:9/")
    c = EnterpriseAI()
    assert c.base_url == "http://127.0.0.1:9" and c._config.api_key == "eai_live_fromenv"
    assert "eai_live_fromenv" not in repr(c)
    c.close()


def test_error_pickle_free_repr(admin: EnterpriseAI) -> None:
    with pytest.raises(NotFoundError) as info:
        admin.tenants.get("nobody-here")
    text = repr(info.value) + str(info.value)
    assert admin._config.api_key not in text
    payload: Dict[str, Any] = {"details": [d.__dict__ for d in info.value.details]}
    assert json.dumps(payload)
