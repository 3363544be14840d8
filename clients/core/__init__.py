"""What every provider client of this package shares (no provider SDK is imported here).

- ``client``: `ProviderChatClient`, the request path every provider subclasses (timeouts, the retry loop, streams
  read as `EventStream`: one open stream's events, counted and checked for their end).
- ``wire``: the bytes on the wire: what a wire is, the body sent piece by piece, every answer's bytes bounded, the
  server-sent-events decoder and the one payload loop every provider's stream goes through, secrets masked in what a
  server sent.
- ``errors``: a failed request judged once: provider error → MAF exception, which failures are transient and the
  backoff policy that retries them.
- ``convert``: what every converter shares, MAF's request → the wire: request checks, option and tool specs, system
  text, schemas, tool-call arguments for the wire, media returned by tools, other agents' turns as named user turns.
- ``parse``: what every parser shares, the answer → MAF: deltas, inline ``<think>…</think>`` reasoning split out of
  model text (whole or streamed), streamed tool calls assembled by ``index``, strict JSON, and what an answer must be
  before MAF gets it.
- ``keywords``: `ClientSettings`, the constructor keywords as one object, and the peers' explicit constructor
  (`PublicKeywords`: a signature derived from the settings fields); an unknown keyword says what was meant.
- ``media``: media normalisation (URL / data URI / local file) and ``image_content`` / ``video_frames``.
"""
