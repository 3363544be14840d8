"""``clients.core.errors``: which transport failures are retried, for each HTTP stack the SDKs run on."""

from __future__ import annotations

import sys

import httpx
import httpx2
import pytest

from clients.core.errors import is_transient_transport_error
from clients.core.wire import http_errors


def test_connection_failures_of_both_http_stacks_are_transient_and_read_timeouts_not() -> None:
    for stack in (httpx, httpx2):
        assert is_transient_transport_error(stack.ConnectError("refused"))
        assert is_transient_transport_error(stack.RemoteProtocolError("dropped"))
        assert not is_transient_transport_error(stack.ReadTimeout("slow"))
        assert stack.TransportError in http_errors("TransportError")


def test_without_httpx2_loaded_only_httpx_is_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "httpx2")  # as in a process where no SDK on httpx2 was imported
    assert http_errors("TransportError") == (httpx.TransportError,)
    assert is_transient_transport_error(httpx.ConnectError("refused"))
