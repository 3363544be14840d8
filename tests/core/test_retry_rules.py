"""``clients.core.retry``: which transport failures are retried, for each HTTP stack the SDKs run on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import httpx2

from clients.core.retry import http_errors, is_transient_transport_error

ROOT = Path(__file__).resolve().parents[2]


def test_connection_failures_of_both_http_stacks_are_transient_and_read_timeouts_not() -> None:
    for stack in (httpx, httpx2):
        assert is_transient_transport_error(stack.ConnectError("refused"))
        assert is_transient_transport_error(stack.RemoteProtocolError("dropped"))
        assert not is_transient_transport_error(stack.ReadTimeout("slow"))
        assert stack.TransportError in http_errors("TransportError")


def test_without_httpx2_loaded_only_httpx_is_looked_at() -> None:
    code = (
        "import sys, httpx\n"
        "from clients.core.retry import http_errors, is_transient_transport_error\n"
        "assert 'httpx2' not in sys.modules\n"
        "assert http_errors('TransportError') == (httpx.TransportError,)\n"
        "assert is_transient_transport_error(httpx.ConnectError('refused'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
