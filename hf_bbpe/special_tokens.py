"""Special-token policy for ``encode``: tiktoken's semantics, minbpe's spellings accepted.

tiktoken: ``allowed_special`` ("all" or a set) are encoded as their ids; text that matches a
``disallowed_special`` token ("all" = every special not allowed, the default) raises
ValueError; ``disallowed_special=()`` encodes such text as ordinary text. minbpe's values map
onto that: "all" -> allow all; "none" -> allow none, raise on none; "none_raise" -> allow none,
raise on all; a set -> allow those (and, as in tiktoken, raise on the others unless
``disallowed_special`` says otherwise).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal, Union

import regex

AllowedSpecial = Union[Literal["all", "none", "none_raise"], Collection[str]]
DisallowedSpecial = Union[Literal["all"], Collection[str]]


def resolve_special_policy(
    special_tokens: Mapping[str, int],
    allowed_special: AllowedSpecial,
    disallowed_special: DisallowedSpecial,
) -> tuple[frozenset[str], frozenset[str]]:
    """Return (allowed, disallowed) sets of special-token strings; unknown names raise."""
    if allowed_special == "all":
        allowed = frozenset(special_tokens)
    elif allowed_special == "none":
        allowed = frozenset()
        disallowed_special = ()
    elif allowed_special == "none_raise":
        allowed = frozenset()
    elif isinstance(allowed_special, str):
        raise ValueError(
            f"allowed_special must be 'all', 'none', 'none_raise' or a set of tokens, got {allowed_special!r}"
        )
    else:
        allowed = frozenset(allowed_special)
        unknown = sorted(allowed - special_tokens.keys())
        if unknown:
            raise ValueError(f"allowed_special names {unknown[0]!r}, which is not a registered special token")
    if disallowed_special == "all":
        disallowed = frozenset(special_tokens) - allowed
    elif isinstance(disallowed_special, str):
        raise ValueError(f"disallowed_special must be 'all' or a set of tokens, got {disallowed_special!r}")
    else:
        disallowed = frozenset(disallowed_special)
    return allowed, disallowed


def special_token_regex(tokens: Collection[str]) -> regex.Pattern:
    """A regex matching any of ``tokens``, longest first so that overlapping tokens are exact."""
    return regex.compile("|".join(regex.escape(t) for t in sorted(tokens, key=lambda t: (-len(t), t))))


def disallowed_special_error(token: str) -> ValueError:
    return ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        f"If you want this text to be encoded as a special token, pass it to `allowed_special`, "
        f"e.g. `allowed_special={{{token!r}, ...}}` or `allowed_special='all'`.\n"
        f"If you want this text to be encoded as normal text, pass `disallowed_special=()` "
        f"(or a set without {token!r})."
    )
