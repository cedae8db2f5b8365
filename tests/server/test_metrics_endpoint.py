"""/metrics serves the control plane's Prometheus registry, to authenticated clients only."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry, Counter

from kubehpc.api.kinds import default_registry
from kubehpc.server.app import build_app
from kubehpc.store.home import Home
from kubehpc.store.store import Store


def get(app: object, path: str, token: str | None) -> httpx.Response:
    async def go() -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get(path, headers=headers)

    return asyncio.run(go())


def app_with_metrics(tmp_path: Path) -> object:
    metrics = CollectorRegistry()
    Counter("kubehpc_admission_attempts", "Admission attempts", registry=metrics).inc(3)
    store = Store(default_registry(), None)
    return build_app(store, default_registry(), token="t", home=Home(tmp_path), metrics=metrics)


def test_metrics_are_served_in_prometheus_text_format(tmp_path: Path) -> None:
    response = get(app_with_metrics(tmp_path), "/metrics", "t")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert "kubehpc_admission_attempts_total 3.0" in response.text


def test_metrics_need_the_token(tmp_path: Path) -> None:
    assert get(app_with_metrics(tmp_path), "/metrics", None).status_code == 401
