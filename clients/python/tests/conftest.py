from __future__ import annotations

import asyncio
import inspect

import pytest

from servers import RedisServer
from support import AsyncioVariant, BlockingVariant


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory, request):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()
    if request.session.testsfailed:
        print(f"\n--- redis-server log (port {server.port}) ---\n{server.log_text()[-4000:]}")


@pytest.fixture
def new_server(tmp_path):
    """A server of the test's own, for tests that change its role or configuration:
    new_server(module_args...)."""
    servers = []

    def start(*module_args):
        servers.append(RedisServer(tmp_path, module_args))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def admin(redis_server):
    """A plain client of the shared server (decoded replies), on an emptied database."""
    client = redis_server.client()
    client.flushall()
    yield client
    client.close()


@pytest.fixture(params=[BlockingVariant, AsyncioVariant], ids=lambda variant: variant.name)
def variant(request, redis_server):
    return request.param(redis_server.port)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Runs `async def` tests in an event loop of their own (no plugin needed), and closes the
    variant's clients and workers inside that loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}

    async def run():
        try:
            await pyfuncitem.obj(**kwargs)
        finally:
            if "variant" in kwargs:
                await kwargs["variant"].aclose()

    asyncio.run(run())
    return True
