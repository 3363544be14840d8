"""Conformance runs: a one-certificate CA bundle for the loopback clients (see `one_ca_bundle`)."""

from __future__ import annotations

import pytest

from tests.conformance.targets import one_ca_bundle


@pytest.fixture(autouse=True)
def _one_ca_bundle(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", one_ca_bundle(tmp_path_factory.getbasetemp()))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
