"""``qwen3.SelfHostedQwenChatClient`` is imported on first use: ``import qwen3`` loads no openai SDK, and without the
``openai`` extra the name raises an ``ImportError`` naming it. Each check runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_import_qwen3_loads_no_openai_until_the_client_is_asked_for(fresh_imports: dict[str, Any]) -> None:
    seen = fresh_imports  # a fresh interpreter's imports, step by step
    before = seen["modules"]["qwen3.selfhosted.servers"]  # after import qwen3, qwen3.selfhosted.servers
    assert [m for m in before if m.startswith(("openai", "httpx2", "clients.openai"))] == []
    assert "openai" in seen["modules"]["SelfHostedQwenChatClient"]  # asked for: loaded
    assert seen["selfhosted"] == ["qwen3.selfhosted.client", "SelfHostedQwenChatOptions"]


def test_without_the_openai_sdk_the_error_names_the_extra() -> None:
    """A real failed import (a finder that refuses the SDK, as if it were not installed), not a mock of our code."""
    done = _run("""
        import sys
        class Missing:
            def find_spec(self, fullname, path=None, target=None):
                if fullname.split(".")[0] in ("openai", "httpx2"):  # the extra's packages
                    raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        sys.meta_path.insert(0, Missing())
        import qwen3
        try:
            qwen3.SelfHostedQwenChatClient
        except ImportError as exc:
            print(exc)
        try:
            from qwen3.selfhosted import RawSelfHostedQwenChatClient  # the subpackage, directly
        except ImportError as exc:
            print(exc)
        try:
            qwen3.Nope
        except AttributeError as exc:
            print(exc)
        """)
    assert done.returncode == 0, done.stderr
    assert 'pip install "agent-framework-qwen3[openai]"' in done.stdout
    assert "SelfHostedQwenChatClient needs the 'openai' extra" in done.stdout
    assert "RawSelfHostedQwenChatClient needs the 'openai' extra" in done.stdout
    assert "has no attribute 'Nope'" in done.stdout
