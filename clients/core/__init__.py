"""What every provider client of this package shares (no provider SDK is imported here).

- ``client``: `ProviderChatClient`, the client base every provider subclasses (timeouts, retries, streams).
- ``transport``: the body sent piece by piece, provider error → MAF exception, which failures are transient and the
  backoff policy that retries them, the server-sent-events decoder every provider's stream goes through, and
  `EventStream`, one open stream's events, counted and checked for their end.
- ``validation``: what a request must be before sending and a response before MAF gets it.
- ``keywords``: `ClientSettings`, the constructor keywords as one object, and the peers' explicit constructor
  (`PublicKeywords`: a signature derived from the settings fields); an unknown keyword says what was meant.
- ``conversion``: the pieces every pure converter shares (option checks, tool specs, system text, schemas, media
  returned by tools for providers whose tool messages carry text only).
- ``media``: media normalisation (URL / data URI / local file) and ``image_content`` / ``video_frames``.
- ``tool_calls``: streamed tool-call accumulation by ``index`` with stable MAF identities.
- ``think``: inline ``<think>…</think>`` reasoning split out of model text, whole or streamed.
- ``multi_agent``: other agents' turns in multi-agent conversations sent as named user turns.
"""
