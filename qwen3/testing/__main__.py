"""``python -m qwen3.testing``: serve the emulators on 127.0.0.1 until Ctrl-C, and print the environment
variables that point the clients at them, so that code which reads its settings from the environment (the
README's own examples) runs offline unchanged.

The DashScope emulator always; the peers' emulators too (each provider of ``clients.providers.PROVIDERS`` whose
extra is installed, with its ``<PREFIX>_BASE_URL`` and key variables) unless ``--dashscope-only``.
Each answers with its default reply (an echo of the last user message) and accepts only the printed key. The
DashScope emulator refuses a model name the model table does not know, as DashScope does ("Model not exist.");
``--model NAME=text`` (or ``=multimodal``) serves one more. ``--selfhosted vllm`` (or ``sglang`` / ``ollama``)
also serves Qwen3 as that server serves it (`SelfHostedQwenEmulator`) and prints ``QWEN_SELFHOSTED_BASE_URL``,
``QWEN_SELFHOSTED_MODEL`` and, where the server checks keys (vLLM, SGLang), ``QWEN_SELFHOSTED_API_KEY``.
``--reply MODULE:NAME`` makes the DashScope emulator answer with your own rule instead of the echo: ``NAME`` is a
`Reply` or a ``(RecordedRequest) -> Reply`` importable from ``MODULE`` (the emulator's ``default_reply``), e.g.
``PYTHONPATH=examples python -m qwen3.testing --reply kline.agent:emulated_reply`` answers the K-line examples'
verdicts as they are answered offline.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from contextlib import ExitStack
from types import FrameType
from typing import Any

from clients.providers import PROVIDERS, Provider
from qwen3.testing import DashScopeEmulator, Endpoint, Reply, ReplyFactory, SelfHostedQwenEmulator
from qwen3.testing._selfhosted import Server

DEFAULT_KEY = "sk-emulator"


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m qwen3.testing",
        description="Serve the DashScope emulator (and the peers') on 127.0.0.1 until Ctrl-C; print the "
        "environment variables that point the clients at them.",
    )
    parser.add_argument("--port", type=int, default=0, help="the DashScope emulator's port (default: a free one)")
    parser.add_argument("--api-key", default=DEFAULT_KEY, help=f"the key the emulators accept (default {DEFAULT_KEY})")
    parser.add_argument("--dashscope-only", action="store_true", help="serve the DashScope emulator alone")
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME=ENDPOINT",
        help="serve a model the model table does not know (a newer one, a fine-tune; NAME may be a glob) on "
        "ENDPOINT, text or multimodal; repeatable",
    )
    parser.add_argument(
        "--selfhosted",
        choices=("vllm", "sglang", "ollama"),
        help="also serve Qwen3 as this server serves it on its OpenAI-compatible /v1",
    )
    parser.add_argument(
        "--reply",
        metavar="MODULE:NAME",
        help="answer DashScope requests with NAME from MODULE, a Reply or a function (RecordedRequest) -> Reply, "
        "instead of the echo (MODULE on sys.path: the current folder or PYTHONPATH)",
    )
    args = parser.parse_args(argv)
    args.default_reply = None if args.reply is None else _imported_reply(parser, args.reply)
    args.models = {}
    for entry in args.model:
        name, _, endpoint = entry.partition("=")
        if not name.strip() or endpoint not in ("text", "multimodal"):
            parser.error(f"--model {entry}: NAME=text or NAME=multimodal, e.g. --model my-finetune=text")
        args.models[name.strip()] = endpoint
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: a port number from 1 to 65535 (or 0 for a free one)")
    if not args.api_key or any(c.isspace() for c in args.api_key):
        parser.error("--api-key: a non-empty key without spaces")
    return args


def _imported_reply(parser: argparse.ArgumentParser, spec: str) -> Reply | ReplyFactory:
    """``--reply MODULE:NAME``: the `Reply` or reply function NAME of MODULE; a usage error says what is wrong."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        parser.error(f"--reply {spec}: MODULE:NAME, e.g. --reply kline.agent:emulated_reply")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        parser.error(f"--reply {spec}: cannot import {module_name} ({exc}); put the folder that holds it on PYTHONPATH")
    reply = getattr(module, name, None)
    if not isinstance(reply, Reply) and not callable(reply):
        parser.error(f"--reply {spec}: {module_name} has no Reply or function named {name}")
    return reply  # type: ignore[no-any-return]


def _peers(key: str) -> list[tuple[Provider, Any]]:
    """The peers' emulators (`clients.providers.PROVIDERS` but DashScope's: provider, unstarted server), those whose
    modules import (a peer whose extra is not installed is left out)."""
    out = []
    for provider in PROVIDERS.values():
        if provider.package.startswith("clients."):
            try:
                emulator = provider.load_emulator()
            except ImportError:
                continue
            out.append((provider, emulator(api_key=key)))
    return out


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        return _serve(
            args.api_key,
            args.port,
            peers=not args.dashscope_only,
            models=args.models,
            selfhosted=args.selfhosted,
            default_reply=args.default_reply,
        )
    except KeyboardInterrupt:  # also while starting (the peers' SDKs take a moment to import)
        print("stopped", flush=True)
        return 0


def _serve(
    key: str,
    port: int,
    *,
    peers: bool,
    models: dict[str, Endpoint],
    selfhosted: Server | None = None,
    default_reply: Reply | ReplyFactory | None = None,
) -> int:
    with ExitStack() as stack:
        try:
            emulator = DashScopeEmulator(api_key=key, port=port, models=models, default_reply=default_reply)
            dashscope = stack.enter_context(emulator)
        except OSError as exc:
            print(f"python -m qwen3.testing: cannot listen on 127.0.0.1:{port}: {exc}", file=sys.stderr)
            return 1
        variables = {
            "DASHSCOPE_BASE_URL": dashscope.base_url,
            "DASHSCOPE_HTTP_BASE_URL": dashscope.base_url,  # the dashscope SDK's own variable
            "DASHSCOPE_API_KEY": key,
        }
        for provider, server in _peers(key) if peers else []:
            stack.enter_context(server)
            variables[f"{provider.env_prefix}_BASE_URL"] = server.base_url
            variables.update(dict.fromkeys(provider.key_variables, key))  # Gemini: GOOGLE_API_KEY and GEMINI_API_KEY
        if selfhosted is not None:  # the variables qwen3.SelfHostedQwenChatClient reads
            hosted = stack.enter_context(SelfHostedQwenEmulator(selfhosted, api_key=key))
            variables["QWEN_SELFHOSTED_BASE_URL"] = hosted.base_url
            variables["QWEN_SELFHOSTED_MODEL"] = hosted.model
            if hosted.api_key is not None:
                variables["QWEN_SELFHOSTED_API_KEY"] = key
        print(f"Emulators on 127.0.0.1 (DashScope: {dashscope.base_url}); Ctrl-C stops them. Set in your shell:")
        for name, value in variables.items():
            print(f"export {name}={value}")
        sys.stdout.flush()
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
