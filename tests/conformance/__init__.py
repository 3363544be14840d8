"""The cross-provider conformance scorecard.

One list of scenarios (`tests.conformance.scenarios.SCENARIOS`), written once against MAF's API and the
provider-neutral view of what reached the server (``clients.testing``), run over real HTTP on 127.0.0.1 against every
client in `tests.conformance.targets.TARGETS`: our five (``QwenChatClient``/``QwenVLChatClient``,
``OpenAIChatCompletionClient``, ``AnthropicChatClient``, ``GeminiChatClient``, ``SelfHostedQwenChatClient``) and MAF's
official OpenAI, Anthropic and Gemini clients (MAF's OpenAI client also on DashScope's compatible mode and on Qwen
served by vLLM), each pointed at its provider's loopback emulator with the provider's own SDK doing the HTTP.

* ``.venv/bin/pytest tests/conformance`` runs every scenario against our five clients (all must pass) and checks
  that ``docs/conformance.md`` still matches the code.
* ``.venv/bin/python -m tests.conformance.report`` runs every scenario against every client and writes
  ``docs/conformance.md`` (scenario × client, pass or fail with the reason).
"""
