"""Fixtures: a real ``eai-gpu serve`` per session (and extra ones with other limits), clients, tenants,
a fault proxy.

The server binary comes from ``EAI_GPU_BIN``, else ``<repo>/target/debug/eai-gpu``, else ``eai-gpu`` on
PATH. Without one every test FAILS with a message saying so: these tests never skip.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Callable, Dict, Iterator, List

import pytest

from enterprise_ai import EnterpriseAI, Tenant

from _server import BinaryNotFound, EaiServer, FaultProxy, find_binary


def pytest_report_header(config: pytest.Config) -> str:
    try:
        return f"eai-gpu server binary: {find_binary()}"
    except BinaryNotFound as exc:
        return f"eai-gpu server binary: MISSING -- {exc}"


@pytest.fixture(scope="session")
def eai_bin() -> Path:
    try:
        return find_binary()
    except BinaryNotFound as exc:
        message = str(exc)
    pytest.fail(f"eai-gpu server binary not found: {message}", pytrace=False)


@pytest.fixture(scope="session")
def server(eai_bin: Path) -> Iterator[EaiServer]:
    """The main server, with the default limits."""
    srv = EaiServer(eai_bin, name="main").start()
    yield srv
    srv.cleanup()


ServerFactory = Callable[..., EaiServer]


@pytest.fixture(scope="session")
def make_server(eai_bin: Path) -> Iterator[ServerFactory]:
    """Starts another server with extra environment (``make_server(EAI_MAX_BATCH="3000")``); all are
    stopped at the end of the session."""
    started: List[EaiServer] = []

    def make(name: str = "extra", **env: str) -> EaiServer:
        srv = EaiServer(eai_bin, env=env, name=name).start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.cleanup()


@pytest.fixture(scope="session")
def small_batch_server(make_server: ServerFactory) -> EaiServer:
    """A server accepting at most 3,000 records per request."""
    return make_server(name="batch3000", EAI_MAX_BATCH="3000")


@pytest.fixture(scope="session")
def admin(server: EaiServer) -> Iterator[EnterpriseAI]:
    """A platform_admin client (the bootstrap key), not signed in to a tenant."""
    with EnterpriseAI(base_url=server.url, api_key=server.admin_key) as client:
        yield client


@pytest.fixture(scope="session")
def tenants(admin: EnterpriseAI) -> Dict[str, Tenant]:
    """``acme`` and ``globex``, registered with ids of the test's choosing."""
    out: Dict[str, Tenant] = {}
    for slug, name in (("acme", "Acme Corp"), ("globex", "Globex")):
        out[slug] = admin.tenants.create(slug=slug, name=name, id=str(uuid.uuid4()))
    return out


@pytest.fixture()
def proxy(server: EaiServer) -> Iterator[FaultProxy]:
    """A fault-injecting proxy in front of the main server."""
    p = FaultProxy(server.port).start()
    yield p
    p.stop()


KeyFactory = Callable[..., str]


@pytest.fixture(scope="session")
def new_key(admin: EnterpriseAI) -> KeyFactory:
    """Creates an API key: ``new_key("viewer", tenant_id)`` -> the secret."""

    def make(role: str, tenant_id: str | None = None) -> str:
        return admin.auth.create_api_key(role=role, tenant_id=tenant_id, name=f"sdk test {role}").key

    return make
