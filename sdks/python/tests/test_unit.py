"""The SDK's own logic that needs no server: payload preparation, wire encoding, parsing, retry policy,
redaction. (Everything the server answers is tested against a real one in the other modules.)"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from decimal import Decimal
from typing import Any, Dict, List

import httpx
import pytest

import enterprise_ai
from enterprise_ai import (
    AllocationPolicyList,
    ApiKeyCreated,
    EnterpriseAI,
    EnterpriseAIError,
    RateLimitError,
    RetryPolicy,
    ServiceUnavailableError,
)
from enterprise_ai._core import prepare_events, prepare_samples
from enterprise_ai._json import encode, format_date_param, format_instant, parse_instant
from enterprise_ai.errors import error_from_response, parse_retry_after

RFC3339_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def test_version_single_source() -> None:
    from importlib.metadata import version

    assert enterprise_ai.__version__ == "0.1.0"
    assert version("enterprise-ai") == enterprise_ai.__version__


def test_samples_are_stamped_once_and_never_mutated() -> None:
    samples: List[Dict[str, Any]] = [
        {"gpu_uuid": "a", "utilization": Decimal("0.5")},
        {"gpu_uuid": "b", "timestamp": None},
        {"gpu_uuid": "c", "timestamp": "2026-10-01T00:00:15Z"},
        {"gpu_uuid": "d", "timestamp": dt.datetime(2026, 10, 1, 2, 0, 15, 123456, tzinfo=dt.timezone.utc)},
    ]
    before = json.dumps(samples, default=str)
    out = prepare_samples(samples)
    assert json.dumps(samples, default=str) == before
    assert out[0]["timestamp"] == out[1]["timestamp"] and RFC3339_MS.match(out[0]["timestamp"])
    assert out[2]["timestamp"] == "2026-10-01T00:00:15Z"
    assert out[3]["timestamp"] == "2026-10-01T02:00:15.123Z"
    assert out[0]["utilization"] == "0.5"
    stamped = parse_instant(out[0]["timestamp"])
    assert abs((dt.datetime.now(dt.timezone.utc) - stamped).total_seconds()) < 5
    with pytest.raises(TypeError):
        prepare_samples({"gpu_uuid": "a"})  # type: ignore[dict-item]  # one sample, not a list
    with pytest.raises(TypeError):
        prepare_samples([["not", "a", "mapping"]])  # type: ignore[list-item]


def test_events_get_ids_once() -> None:
    events: List[Dict[str, Any]] = [{"usage_type": "x", "source": "y", "units": {}}, {"event_id": "keep"}]
    out = prepare_events(events)
    assert "event_id" not in events[0]
    assert uuid.UUID(out[0]["event_id"]).version == 4 and out[1]["event_id"] == "keep"
    assert out[0]["schema_version"] == "1.0" and RFC3339_MS.match(out[0]["occurred_at"])


def test_wire_encoding() -> None:
    body = json.loads(
        encode(
            {
                "a": Decimal("1E+3"),
                "b": Decimal("0.10"),
                "c": dt.date(2026, 10, 1),
                "d": dt.datetime(2026, 10, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
                "e": (1, 2),
                "f": "é",
            }
        )
    )
    assert body == {
        "a": "1000",
        "b": "0.10",
        "c": "2026-10-01",
        "d": "2026-10-01T10:00:00.000Z",
        "e": [1, 2],
        "f": "é",
    }
    with pytest.raises(ValueError):
        encode({"x": Decimal("NaN")})
    with pytest.raises(ValueError, match="naive"):
        format_instant(dt.datetime(2026, 1, 1))
    assert format_date_param("2026-10-01", "start") == "2026-10-01"
    with pytest.raises(TypeError):
        format_date_param(20261001, "start")  # type: ignore[arg-type]


def test_parse_instant() -> None:
    utc = dt.timezone.utc
    assert parse_instant("2026-10-01T00:00:15Z") == dt.datetime(2026, 10, 1, 0, 0, 15, tzinfo=utc)
    assert parse_instant("2026-10-01T00:00:15.25Z").microsecond == 250000
    assert parse_instant("2026-10-01T02:00:00+02:00") == dt.datetime(2026, 10, 1, tzinfo=utc)
    assert parse_instant("2026-10-01") == dt.datetime(2026, 10, 1, tzinfo=utc)


def _response(status: int, body: Any, headers: Dict[str, str] | None = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.Response(status, content=content, headers=headers or {})


def test_error_mapping_and_retry_after() -> None:
    env = {
        "error": {
            "code": "rate_limited",
            "message": "Too many requests: retry in 2 s.",
            "message_i18n": {"en": "Too many requests: retry in 2 s.", "fr": "Trop de requêtes"},
            "details": None,
            "request_id": "r1",
            "new_member": {"ignored": True},
        }
    }
    err = error_from_response(_response(429, env, {"Retry-After": "2"}))
    assert isinstance(err, RateLimitError) and err.retry_after == 2 and err.request_id == "r1"
    assert err.details == []
    unknown = error_from_response(_response(404, {"error": {"code": "moved_out", "message": "m"}}))
    assert type(unknown) is EnterpriseAIError and unknown.code == "moved_out" and unknown.status == 404
    assert unknown.body == {"error": {"code": "moved_out", "message": "m"}}
    plain = error_from_response(_response(503, b"upstream down", {"X-Request-Id": "r2"}))
    assert isinstance(plain, ServiceUnavailableError) and plain.request_id == "r2"
    assert "upstream down" in plain.message and plain.code == "unavailable"
    assert plain.body == "upstream down"
    other = error_from_response(_response(451, b""))
    assert type(other) is EnterpriseAIError and other.code == "http_451"
    assert (
        parse_retry_after("1.5") == 1.5
        and parse_retry_after("-1") is None
        and parse_retry_after(None) is None
    )
    when = dt.datetime(2030, 1, 1, 0, 0, 10, tzinfo=dt.timezone.utc)
    assert parse_retry_after("Tue, 01 Jan 2030 00:00:10 GMT", now=when - dt.timedelta(seconds=10)) == 10


def test_retry_policy() -> None:
    p = RetryPolicy(max_retries=3, base_delay=0.5, max_delay=8, max_retry_after=30)
    for retry in range(1, 10):
        d = min(8, 0.5 * 2 ** (retry - 1))
        assert d / 2 <= p.backoff(retry) <= d
    assert p.delay(1, 12) == 12 and p.delay(1, 3600) is None  # above the cap: not waited for
    for status in (408, 429, 500, 502, 503, 504):
        assert RetryPolicy.retries_status(status)
    assert RetryPolicy.retries_status(409, "idempotency_key_in_flight")
    assert not RetryPolicy.retries_status(409, "conflict") and not RetryPolicy.retries_status(409)
    assert not RetryPolicy.retries_status(422) and not RetryPolicy.retries_status(404)
    assert not RetryPolicy.retries_status(501)
    req = httpx.Request("GET", "http://x")
    assert RetryPolicy.retries_transport(httpx.ConnectError("x", request=req))
    assert RetryPolicy.retries_transport(httpx.ReadTimeout("x", request=req))
    assert RetryPolicy.retries_transport(httpx.ReadError("x", request=req))
    assert RetryPolicy.retries_transport(httpx.RemoteProtocolError("x", request=req))
    assert not RetryPolicy.retries_transport(httpx.UnsupportedProtocol("x", request=req))


def test_repr_never_shows_secrets() -> None:
    secret = "eai_live_" + "s3cr3t" * 6
    c = EnterpriseAI(base_url="http://127.0.0.1:9", api_key=secret)
    assert secret not in repr(c) and "s3cr3t" not in repr(c) and "s3cr3t" not in repr(c._config)
    assert "s3cr3t" not in repr(c.finops)
    c.close()
    created = ApiKeyCreated.from_json(
        {
            "id": "key_9",
            "role": "viewer",
            "tenant_id": None,
            "name": None,
            "status": "active",
            "created_at": "2026-10-01T00:00:00Z",
            "expires_at": None,
            "revoked_at": None,
            "rotated_at": None,
            "previous_secret_valid_until": None,
            "nodes": None,
            "key": secret,
        }
    )
    assert created.key == secret and "s3cr3t" not in repr(created) and "s3cr3t" not in str(created)


def test_unknown_fields_never_break_parsing() -> None:
    listing = AllocationPolicyList.from_json(
        {
            "items": [
                {
                    "id": "alp_1",
                    "status": "active",
                    "name": "n",
                    "deployment_pattern": "*",
                    "gpu_model": None,
                    "currency": "EUR",
                    "gpu_hourly_cost": "2.10",
                    "overhead_pct": "0",
                    "energy_kwh_price": "0",
                    "pue": "1",
                    "storage_gb_month_price": "0",
                    "idle_capacity": "unallocated",
                    "output_token_weight": "2.5",
                    "enabled": True,
                    "effective_from": "2026-10-01T00:00:00Z",
                    "effective_to": None,
                    "carbon_price": "0.05",
                }
            ],
            "next_page": "abc",
        }
    )
    assert listing[0].raw["carbon_price"] == "0.05" and listing.raw["next_page"] == "abc"
    assert listing[0].gpu_hourly_cost == Decimal("2.10")
