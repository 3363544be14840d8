"""``clients.core.parse.text_delta``: the streamed text content every parser makes per event, equal to what
MAF's constructor makes, each with its own ``additional_properties``."""

from __future__ import annotations

import pytest
from agent_framework import ChatResponse, ChatResponseUpdate, Content

from clients.core import parse
from clients.core.parse import text_delta


@pytest.mark.parametrize("kind", ["text", "text_reasoning"])
def test_a_delta_is_what_the_constructor_makes(kind: str) -> None:
    assert parse._DELTA_TEMPLATES is not None  # the fast path is in use with this MAF
    made, fast = Content(kind, text="数据 x", merge_mode="append"), text_delta("数据 x", kind)  # type: ignore[arg-type]
    assert type(fast) is Content
    assert vars(fast) == vars(made)
    assert fast.to_dict() == made.to_dict()


def test_deltas_do_not_share_their_properties_and_merge_as_usual() -> None:
    first, second = text_delta("a"), text_delta("b")
    first.additional_properties["x"] = 1
    assert second.additional_properties == {}
    updates = [ChatResponseUpdate(role="assistant", contents=[text_delta(t)], message_id="m") for t in "abc"]
    assert ChatResponse.from_updates(updates).text == "abc"


def test_without_a_usable_template_the_constructor_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "_DELTA_TEMPLATES", None)
    assert vars(text_delta("z")) == vars(Content("text", text="z", merge_mode="append"))
