"""Local inference providers, with the sync and the async client, against the real server (the case of
crates/api/tests/http/token_costs.rs): registered unconfirmed (``config``), confirmed by a model list
(``api``, here from a tiny stand-in for a vLLM pod), refused when nothing answers, seen in samples only
(``samples``), and priced by the last closed month."""

from __future__ import annotations

import datetime as dt
import json
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, AsyncIterator, Iterator, Union

import pytest

from enterprise_ai import (
    AsyncEnterpriseAI,
    Catalog,
    EnterpriseAI,
    PermissionDeniedError,
    Provider,
    ProviderPricing,
    ValidationError,
)

from _server import EaiServer
from conftest import KeyFactory, ServerFactory
from helpers import hour_of_samples, maybe, recent_hour, unique, usage_event

AnyClient = Union[EnterpriseAI, AsyncEnterpriseAI]


@pytest.fixture(params=["sync", "async"])
async def client(request: pytest.FixtureRequest, server: EaiServer) -> AsyncIterator[AnyClient]:
    """A platform_admin client, sync or async."""
    if request.param == "sync":
        with EnterpriseAI(base_url=server.url, api_key=server.admin_key) as c:
            yield c
    else:
        async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key) as ac:
            yield ac


@pytest.fixture(scope="module")
def fake_vllm() -> Iterator[str]:
    """An OpenAI-compatible model list on a port of its own, as a vLLM pod answers ``GET /v1/models``
    (it plays the inference engine, not our server); yields its base URL, ``http://127.0.0.1:<port>/v1``."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path != "/v1/models":
                self.send_error(404)
                return
            body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, name="fake-vllm", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


async def catalog_entry(client: AnyClient, deployment: str) -> Provider:
    catalog = await maybe(client.providers.catalog())
    assert isinstance(catalog, Catalog)
    mine = [p for p in catalog if p.deployment_id == deployment]
    assert len(mine) == 1, catalog.raw
    assert catalog.deployment(deployment) == mine[0]
    return mine[0]


async def test_register_without_verifying_is_config(client: AnyClient) -> None:
    deployment = unique("vllm-mistral")
    base_url = f"http://{deployment}.ai:8000/v1"
    p = await maybe(client.providers.register(deployment, base_url, label="Mistral 7B", verify=False))
    assert isinstance(p, Provider)
    assert (p.discovery, p.deployment_id, p.base_url) == ("config", deployment, base_url)
    assert (p.id, p.label, p.local, p.enabled) == ("vllm", "Mistral 7B", True, True)
    assert p.models == [] and p.model is None and p.pricing is None

    listed = await catalog_entry(client, deployment)
    assert (listed.discovery, listed.base_url, listed.label) == ("config", base_url, "Mistral 7B")
    assert listed.provider_id == p.provider_id

    # A new registration of the deployment replaces the previous one.
    again = await maybe(client.providers.register(deployment, base_url, enabled=False, verify=False))
    assert again.enabled is False and again.label != "Mistral 7B"
    assert (await catalog_entry(client, deployment)).enabled is False


async def test_verify_refuses_a_url_that_lists_no_model(client: AnyClient) -> None:
    deployment = unique("vllm-nowhere")
    with pytest.raises(ValidationError) as err:
        await maybe(client.providers.register(deployment, "http://127.0.0.1:9/v1"))
    assert err.value.status == 422 and err.value.fields == ["base_url"]
    catalog = await maybe(client.providers.catalog())
    assert catalog.deployment(deployment) is None  # nothing registered


async def test_verify_confirms_by_the_model_list(client: AnyClient, fake_vllm: str) -> None:
    deployment = unique("vllm-llama")
    p = await maybe(client.providers.register(deployment, f"{fake_vllm}/", label="Llama"))
    assert (p.discovery, p.base_url) == ("api", fake_vllm)  # the trailing slash dropped
    assert p.models == ["m"] and p.model == "m"
    listed = await catalog_entry(client, deployment)
    assert (listed.discovery, listed.base_url, listed.models, listed.model) == ("api", fake_vllm, ["m"], "m")
    assert listed.label == "Llama"


async def test_only_a_platform_admin_registers(server: EaiServer, new_key: KeyFactory, tenants: Any) -> None:
    finops = EnterpriseAI(base_url=server.url, api_key=new_key("finops", tenants["acme"].id))
    with finops, pytest.raises(PermissionDeniedError):
        finops.providers.register(unique("x"), "http://x:8000/v1", verify=False)


async def test_a_deployment_seen_only_in_samples(client: AnyClient) -> None:
    deployment = unique("vllm-sampled")
    samples = hour_of_samples(unique("GPU"), deployment, recent_hour())
    assert (await maybe(client.finops.gpu_samples(samples))).accepted == 240
    p = await catalog_entry(client, deployment)
    assert (p.discovery, p.base_url) == ("samples", f"http://{deployment}:8000/v1")
    assert p.models == [] and p.local and p.enabled


def last_month_start() -> dt.datetime:
    first = dt.datetime.now(dt.timezone.utc).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (first - dt.timedelta(days=1)).replace(day=1)


def test_catalog_prices_by_the_last_closed_month(make_server: ServerFactory) -> None:
    # A server of its own: the catalog caches its prices for 10 minutes from its first call.
    srv = make_server(name="pricing")
    with EnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as admin:
        deployment = unique("vllm-priced")
        hour = last_month_start() + dt.timedelta(days=10)
        admin.finops.create_allocation_policy(
            name="flat",
            deployment_pattern=deployment,
            currency="USD",
            gpu_hourly_cost=10,
            effective_from="2020-01-01",
        )
        gpu = unique("GPU")
        samples = hour_of_samples(gpu, deployment, hour) + hour_of_samples(
            gpu, deployment, hour + dt.timedelta(hours=1)
        )
        assert admin.finops.gpu_samples(samples).accepted == 480
        tenant = admin.tenants.create(slug=unique("priced"), name="Priced")
        event = usage_event(
            deployment,
            hour + dt.timedelta(minutes=1),
            {"tokens_in": 1600, "tokens_out": 400},
            tenant_id=tenant.id,
        )
        assert admin.usage.events([event]).accepted == 1

        p = admin.providers.catalog().deployment(deployment)
        assert p is not None and p.discovery == "samples"
        assert p.pricing == ProviderPricing(
            per_mtok=Decimal("10000.0000"),
            input_per_mtok=Decimal("7693.7500"),
            output_per_mtok=Decimal("19225.0000"),
            currency="USD",
            period=hour.strftime("%Y-%m"),
            basis="allocation",
            allocation_method="weight",
        )
        assert str(p.pricing.per_mtok) == "10000.0000" and isinstance(p.pricing.per_mtok, Decimal)

        # Registering it keeps its price; a provider that served no token has none.
        other = admin.providers.register(unique("vllm-idle"), "http://idle:8000/v1", verify=False)
        assert other.pricing is None
        again = admin.providers.catalog()
        priced = again.deployment(deployment)
        assert priced is not None and priced.pricing == p.pricing
        idle = again.deployment(other.deployment_id)
        assert idle is not None and idle.pricing is None
