"""Explicit constructors that say what was meant: an unknown keyword names the class and the closest valid one.

Each public client class declares its whole keyword-only signature (so ``help()``, ``inspect.signature`` and IDEs
show ``model``, ``api_key``, ``base_url``…) and is decorated with `checked_keywords`. Python's own error for
``QwenChatClient(modle="qwen-plus")`` names neither the class (it names the ``__init__`` that refused it, often a
base class's) nor the keyword that was meant; this one says
``QwenChatClient() got an unexpected keyword argument 'modle'; did you mean 'model'?``.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from typing import Any, TypeVar

__all__ = ["checked_keywords"]

C = TypeVar("C", bound=type)


def checked_keywords(cls: C) -> C:
    """Wrap ``cls.__init__`` so that a keyword it does not declare raises a `TypeError` naming the class actually
    being built and the closest declared keyword. The signature seen by ``inspect`` stays the declared one."""
    init = cls.__init__  # type: ignore[misc]
    parameters = inspect.signature(init).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        raise TypeError(f"{cls.__name__}.__init__ takes **kwargs: declare every keyword instead")
    valid = [name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        unknown = [key for key in kwargs if key not in valid]
        if unknown:
            close = difflib.get_close_matches(unknown[0], valid, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keywords: {', '.join(valid)}"
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}{hint}")
        init(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]
    return cls
