"""Where a ticker trades: the A-share exchanges (one table: the code prefixes of each, Yahoo's suffix, the session's
close) and the sessions of the other markets `kline.fetch` reaches, read from a ticker's suffix. No heavy imports:
``--help`` and the argument types read it.

A-share codes are six ASCII digits (``re.ASCII``: a fullwidth ``６００５１９`` or Arabic-Indic ``٦٠٠٥١٩`` is no
code), written ``600519.SH`` or ``sh600519``; a bare ``600519`` is read by its prefix (`EXCHANGES`). Sources: the
exchanges' code rules (SSE main board 600/601/603/605, STAR 688/689; SZSE main board 000/001/002/003, ChiNext
300/301; BSE 4xx/8xx and, since 2024, 920), and Yahoo's exchange suffixes
(https://help.yahoo.com/kb/SLN2310.html: Shanghai ``.SS``, Shenzhen ``.SZ``; Yahoo lists no Beijing shares).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Exchange:
    """One A-share exchange: its suffix (``SH``), name, the prefixes of its six-digit codes, Yahoo's suffix for it
    (``None``: Yahoo does not list it), and its session's time zone and close."""

    suffix: str
    name: str
    prefixes: tuple[str, ...]
    yahoo: str | None
    timezone: str = "Asia/Shanghai"
    close: datetime.time = datetime.time(15, 0)


EXCHANGES: tuple[Exchange, ...] = (
    Exchange("SH", "Shanghai", ("600", "601", "603", "605", "688", "689"), "SS"),
    Exchange("SZ", "Shenzhen", ("000", "001", "002", "003", "300", "301"), "SZ"),
    Exchange("BJ", "Beijing", ("4", "8", "920"), None),
)
"""The A-share exchanges: the one table a bare code, a Yahoo symbol and a session's close are read from."""
BY_SUFFIX = {exchange.suffix: exchange for exchange in EXCHANGES}
A_SHARE = re.compile(
    rf"^(?:([0-9]{{6}})\.({'|'.join(BY_SUFFIX)})|({'|'.join(BY_SUFFIX)})([0-9]{{6}}))$", re.ASCII | re.IGNORECASE
)
"""``600519.SH`` or ``sh600519`` (any case; ASCII only: no Unicode digit, no ``ſ`` for ``s``)."""
BARE = re.compile(r"^[0-9]{6}$", re.ASCII)
_SUFFIXES = "|".join(BY_SUFFIX)
A_SHARE_CODE = re.compile(
    rf"(?<![0-9])([0-9]{{6}})\.({_SUFFIXES})(?![A-Za-z])|(?<![A-Za-z])({_SUFFIXES})([0-9]{{6}})(?![0-9])",
    re.ASCII | re.IGNORECASE,
)
"""An A-share code inside a symbol (``600519.SH`` in ``*ST 600519.SH``, ``sh600519`` in a file name), as `A_SHARE`
reads a whole one: groups (code, suffix) or (suffix, code). The chart's colours, the question's Wyckoff line and the
portfolio's trading rules read it."""

SESSIONS: dict[str, tuple[str, datetime.time]] = {
    "": ("America/New_York", datetime.time(16, 0)),  # no suffix: a US listing (NYSE, Nasdaq)
    "HK": ("Asia/Hong_Kong", datetime.time(16, 10)),  # the closing auction ends 16:10
    "T": ("Asia/Tokyo", datetime.time(15, 30)),  # TSE closes 15:30 since November 2024
    "L": ("Europe/London", datetime.time(16, 35)),  # the closing auction ends 16:35
    "TO": ("America/Toronto", datetime.time(16, 0)),
    "AX": ("Australia/Sydney", datetime.time(16, 10)),
    **{e.suffix: (e.timezone, e.close) for e in EXCHANGES},
    **{e.yahoo: (e.timezone, e.close) for e in EXCHANGES if e.yahoo},
}
"""The session (time zone, close) of the markets read from a ticker's Yahoo suffix; `kline.fetch` drops a bar of a
session not closed yet. A suffix not here: the session is unknown (`session_of` gives ``None``)."""


def exchange_of(code: str) -> Exchange | None:
    """The exchange of a bare six-digit A-share code by its prefix (the longest prefix in `EXCHANGES` that matches),
    or ``None`` (no A-share code, or a prefix no exchange has: B shares 900/200, funds, bonds)."""
    if not BARE.match(code):
        return None
    matches = [(len(p), e) for e in EXCHANGES for p in e.prefixes if code.startswith(p)]
    return max(matches, key=lambda m: m[0])[1] if matches else None


def a_share(ticker: str) -> tuple[str, Exchange] | None:
    """``(six-digit code, exchange)`` of an A-share ticker (``600519.SH``, ``sh600519``, or bare ``600519`` read by
    its prefix); ``None`` for any other ticker. Raises ``ValueError`` for a bare six-digit code whose prefix no
    exchange has, naming the suffixed forms to write instead."""
    match = A_SHARE.match(ticker)
    if match:
        code, suffix = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
        return code, BY_SUFFIX[suffix.upper()]
    if BARE.match(ticker):
        exchange = exchange_of(ticker)
        if exchange is None:
            forms = " or ".join(f"{ticker}.{e.suffix}" for e in EXCHANGES)
            raise ValueError(f"{ticker} matches no A-share exchange's codes: write it with its exchange ({forms})")
        return ticker, exchange
    return None


def session_of(ticker: str) -> tuple[str, datetime.time] | None:
    """The (time zone, close) of the session a ticker trades in: A-shares by their exchange, others by their Yahoo
    suffix (``0700.HK``; none: US); ``None`` when the suffix is not in `SESSIONS`."""
    try:
        shares = a_share(ticker)
    except ValueError:
        return None
    if shares is not None:
        return shares[1].timezone, shares[1].close
    base, dot, suffix = ticker.rpartition(".")
    return SESSIONS.get(suffix.upper() if dot and base else "")
