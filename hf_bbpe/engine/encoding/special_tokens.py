"""Special tokens: the one check of their ids, and the policy for ``encode``.

Ids (:func:`checked_special_tokens`, used by the engine and so by every importer): a special
token is a non-empty str with an int id that is not negative, not a normal token's, not another
special token's, and at most :data:`SPECIAL_ID_HEADROOM` above the largest normal id unless
large ids are explicitly allowed (an id is a row of the embedding matrix: id 2,000,000,000 means
two billion rows).

Roles (:class:`TokenRoles`): which special tokens are transformers' ``bos_token``, ``eos_token``
and ``pad_token``, and whether the first two are put around each sequence, as the owner's
Hugging Face tokenizer does it (Llama 3 adds ``<|begin_of_text|>``, GPT-2 adds nothing).

Policy for ``encode``: tiktoken's semantics, minbpe's spellings accepted. tiktoken: ``allowed_special`` ("all" or a set) are encoded as their ids; text that matches a
``disallowed_special`` token ("all" = every special not allowed, the default) raises
ValueError; ``disallowed_special=()`` encodes such text as ordinary text. minbpe's values map
onto that: "all" -> allow all; "none" -> allow none, raise on none; "none_raise" -> allow none,
raise on all; a set -> allow those (and, as in tiktoken, raise on the others unless
``disallowed_special`` says otherwise).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Union

import regex

from .token_ids import MAX_TOKEN_ID

AllowedSpecial = Union[Literal["all", "none", "none_raise"], Collection[str]]
DisallowedSpecial = Union[Literal["all"], Collection[str]]

SPECIAL_ID_HEADROOM = 1 << 20
"""How far above the largest normal id a special token's id may be without ``allow_large_ids``."""


def checked_special_tokens(
    new: Mapping[str, int],
    *,
    existing: Mapping[str, int],
    normal_ids: Collection[int],
    allow_large_ids: bool = False,
) -> dict[str, int]:
    """``existing`` plus ``new`` as ``{str: int}``, after checking every new entry (see module doc).

    A ValueError names the first token at fault. A token already in ``existing`` may be given
    again only with the same id.
    """
    merged = dict(existing)
    owners = {idx: token for token, idx in merged.items()}
    limit = max(normal_ids, default=-1) + SPECIAL_ID_HEADROOM
    for token, idx in new.items():
        if not isinstance(token, str) or not token:
            raise ValueError(f"special token {token!r} must be a non-empty str")
        if isinstance(idx, bool):
            raise ValueError(f"special token {token!r} has id {idx!r}, which is not an int")
        try:
            idx = operator.index(idx)  # ints, and numpy's or torch's integer scalars
        except TypeError:
            raise ValueError(f"special token {token!r} has id {idx!r}, which is not an int") from None
        if idx < 0:
            raise ValueError(f"special token {token!r} has the negative id {idx}; ids are non-negative ints")
        if idx in normal_ids:
            raise ValueError(f"special token {token!r} has id {idx}, which is already a normal token")
        if merged.get(token, idx) != idx:
            raise ValueError(f"special token {token!r} already has id {merged[token]}, not {idx}")
        if owners.get(idx, token) != token:
            raise ValueError(f"special tokens {owners[idx]!r} and {token!r} share the id {idx}")
        if idx > MAX_TOKEN_ID:
            raise ValueError(f"special token {token!r} has id {idx}, above {MAX_TOKEN_ID} (2**32 - 1): ids are u32, "
                             "as in tiktoken and tokenizers")
        if idx > limit and not allow_large_ids:
            raise ValueError(
                f"special token {token!r} has id {idx}, more than 2**20 above the largest normal id "
                f"{limit - SPECIAL_ID_HEADROOM}: a model would need {idx + 1:,} embedding rows for it. "
                "Use a smaller id, or pass allow_large_ids=True if this is intended"
            )
        merged[token] = idx
        owners[idx] = token
    return merged


@dataclass(frozen=True)
class TokenRoles:
    """The special tokens that play transformers' named roles, and whether ``bos_token`` /
    ``eos_token`` go around each sequence (``add_bos_token`` / ``add_eos_token``).

    They are settings for transformers and the ``tokenizer.json`` export (a ``TemplateProcessing``
    post-processor); the engine's ``encode`` never adds a token, as tiktoken's does not. Field
    names are transformers' keyword arguments, so ``BBPETokenizer(**roles.as_kwargs())`` works.
    """

    bos_token: str | None = None
    eos_token: str | None = None
    pad_token: str | None = None
    add_bos_token: bool = False
    add_eos_token: bool = False

    NAMES = ("bos_token", "eos_token", "pad_token")

    def checked(self, special_tokens: Collection[str]) -> TokenRoles:
        """These roles, after a ValueError for a token that is not one of ``special_tokens`` or an
        ``add_*`` flag without its token."""
        for name in self.NAMES:
            token = getattr(self, name)
            if token is not None and (not isinstance(token, str) or token not in special_tokens):
                raise ValueError(f"{name} {token!r} is not a special token of this tokenizer")
        for name in ("bos_token", "eos_token"):
            flag = getattr(self, f"add_{name}")
            if not isinstance(flag, bool):
                raise ValueError(f"add_{name} must be True or False, got {flag!r}")
            if flag and getattr(self, name) is None:
                raise ValueError(f"add_{name}=True needs a {name}")
        return self

    def kept(self, special_tokens: Collection[str]) -> TokenRoles:
        """These roles without the tokens that are not in ``special_tokens`` (and their ``add_*`` flags)."""
        gone = {name: None for name in self.NAMES if getattr(self, name) not in special_tokens}
        if not gone:
            return self
        flags = {f"add_{name}": False for name in gone if name != "pad_token"}
        return replace(self, **gone, **flags)

    def as_kwargs(self) -> dict[str, Any]:
        """The fields that are set, as keyword arguments (``{"bos_token": ..., "add_bos_token": True}``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) not in (None, False)}

    @classmethod
    def from_kwargs(cls, data: Mapping[str, Any]) -> TokenRoles:
        """The roles in ``data`` (what :meth:`as_kwargs` gives); ValueError for anything else."""
        if not isinstance(data, Mapping):
            raise ValueError(f"expected an object of token roles, got {data!r}")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown token role {unknown[0]!r}")
        return cls(**data)


def checked_normalized_specials(tokens: Iterable[str], special_tokens: Mapping[str, int], *,
                                of_file: bool = False) -> frozenset[str]:
    """``tokens`` as the special tokens found in normalized text, after checking that each is one
    of ``special_tokens`` (a ValueError names the first that is not; ``of_file``: read from one)."""
    tokens = frozenset(tokens)
    unknown = sorted(tokens - special_tokens.keys())
    if unknown:
        which = "a special token of the file" if of_file else "a registered special token"
        raise ValueError(f"normalized special token {unknown[0]!r} is not {which}")
    return tokens


class DisallowedSpecialToken(ValueError):
    """``encode`` met text that spells a special token it may not encode as one; ``.token`` names it."""

    def __init__(self, token: str) -> None:
        super().__init__(
            f"Encountered text corresponding to disallowed special token {token!r}.\n"
            f"If you want this text to be encoded as a special token, pass it to `allowed_special`, "
            f"e.g. `allowed_special={{{token!r}, ...}}` or `allowed_special='all'`.\n"
            f"If you want this text to be encoded as normal text, pass `disallowed_special=()` "
            f"(or a set without {token!r})."
        )
        self.token = token

    def __reduce__(self) -> tuple[type, tuple[str]]:  # rebuilt from the token (encode_batch's workers)
        return type(self), (self.token,)


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


RESERVED_TOKEN = "<|reserved_special_token_{}|>"
"""How a special token that holds an unused id is spelled (Llama 3's name for its reserved
special tokens; a transformers tokenizer fills the holes of its id space with them)."""
_RESERVED = regex.compile(r"<\|reserved_special_token_[0-9]+\|>")


def is_reserved_token(content: str) -> bool:
    """Whether ``content`` is spelled as :data:`RESERVED_TOKEN` spells a reserved special token."""
    return _RESERVED.fullmatch(content) is not None


def special_token_regex(tokens: Collection[str]) -> regex.Pattern:
    """A regex matching any of ``tokens``, longest first so that overlapping tokens are exact."""
    return regex.compile("|".join(regex.escape(t) for t in sorted(tokens, key=lambda t: (-len(t), t))))


def split_on(text: str, pattern: regex.Pattern | None) -> list[tuple[str, bool]]:
    """``text`` cut at the matches of ``pattern`` (None: no cut): ``(stretch, is_match)`` pairs in
    order, with no empty stretches."""
    if pattern is None:
        return [(text, False)] if text else []
    parts: list[tuple[str, bool]] = []
    start = 0
    for match in pattern.finditer(text):
        if match.start() > start:
            parts.append((text[start : match.start()], False))
        parts.append((match.group(), True))
        start = match.end()
    if start < len(text):
        parts.append((text[start:], False))
    return parts


_NO_ARGUMENT = object()  # what no call passes: the last policy's arguments before the first call


class SpecialTokenIndex:
    """A tokenizer's special tokens as ``encode`` uses them, with what it derives from them kept:
    the policy (:func:`resolve_special_policy`) of each pair of arguments, the regex of each set
    of tokens, and the normalized forms of the tokens found in normalized text.

    Made again whenever the special tokens change (the tokenizer makes a new one), so nothing
    here is ever stale; treat ``tokens`` and ``normalized`` as read-only."""

    def __init__(self, tokens: Mapping[str, int], normalized: frozenset[str] = frozenset()) -> None:
        self.tokens = tokens
        """``{special token: id}``."""
        self.normalized = normalized
        """The special tokens found in the normalized text (``normalized_special_tokens``)."""
        self._regexes: dict[frozenset[str], regex.Pattern] = {}
        self._policies: dict[tuple, tuple[frozenset[str], frozenset[str]]] = {}
        self._last_policy: tuple = (_NO_ARGUMENT, _NO_ARGUMENT, (frozenset(), frozenset()))
        self._forms: tuple[Any, dict[str, str]] | None = None  # (normalizer, {normalized form: token})

    def policy(self, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
               ) -> tuple[frozenset[str], frozenset[str]]:
        """``(allowed, disallowed)`` for ``encode``'s arguments (:func:`resolve_special_policy`)."""
        last = self._last_policy  # the same arguments as the last call (one per document): no hashing
        if last[0] is allowed_special and last[1] is disallowed_special:
            return last[2]
        try:
            key = (allowed_special, disallowed_special)
            policy = self._policies[key]
        except TypeError:  # an unhashable set: resolve every time
            return resolve_special_policy(self.tokens, allowed_special, disallowed_special)
        except KeyError:
            policy = self._policies[key] = resolve_special_policy(self.tokens, allowed_special, disallowed_special)
        self._last_policy = (allowed_special, disallowed_special, policy)  # (hashable, so immutable)
        return policy

    def regex(self, tokens: frozenset[str]) -> regex.Pattern:
        """The regex that finds ``tokens`` in text (:func:`special_token_regex`), compiled once."""
        found = self._regexes.get(tokens)
        if found is None:
            found = self._regexes[tokens] = special_token_regex(tokens)
        return found

    def encode_normalized(self, text: str, allowed: frozenset[str], disallowed: frozenset[str], normalizer: Any,
                          encode_ordinary: Callable[[str], list[int]]) -> list[int]:
        """``encode`` when some special tokens are found in the normalized text, in ``tokenizers``'
        two passes: first the other special tokens in ``text`` as given, then, in each stretch
        between them normalized by ``normalizer``, these by their normalized spelling; the rest
        of each stretch goes to ``encode_ordinary``."""
        late = self.normalized
        normalize = normalizer.normalize if normalizer is not None else str
        cached = self._forms
        if cached is None or cached[0] is not normalizer:
            forms: dict[str, str] = {}
            for token in sorted(late, reverse=True):  # a form two tokens share goes to the first by name
                if normalize(token):
                    forms[normalize(token)] = token
            cached = self._forms = (normalizer, forms)
        by_form = cached[1]
        forbidden = frozenset(form for form, token in by_form.items() if token in disallowed)
        wanted = frozenset(form for form, token in by_form.items() if token in allowed)
        if disallowed - late:
            match = self.regex(disallowed - late).search(text)
            if match:
                raise DisallowedSpecialToken(match.group())
        ids: list[int] = []
        for stretch, is_special in split_on(text, self.regex(allowed - late) if allowed - late else None):
            if is_special:
                ids.append(self.tokens[stretch])
                continue
            normalized = normalize(stretch)
            if forbidden:
                match = self.regex(forbidden).search(normalized)
                if match:
                    raise DisallowedSpecialToken(by_form[match.group()])
            for piece, is_form in split_on(normalized, self.regex(wanted) if wanted else None):
                # the piece is normalized already; normalizing again changes nothing (normal forms are idempotent)
                ids += [self.tokens[by_form[piece]]] if is_form else encode_ordinary(piece)
        return ids

    def encode_allowed(self, text: str, allowed: frozenset[str], encode_ordinary: Callable[..., list[int]],
                       num_threads: int = 1) -> list[int]:
        """``encode`` when the special tokens ``allowed`` may be in ``text``: each is its id, the
        text between them goes to ``encode_ordinary(stretch, num_threads=num_threads)``."""
        ids: list[int] = []
        start = 0
        for match in self.regex(allowed).finditer(text):
            if match.start() > start:
                ids += encode_ordinary(text[start : match.start()], num_threads=num_threads)
            ids.append(self.tokens[match.group()])
            start = match.end()
        if start < len(text):
            ids += encode_ordinary(text[start:], num_threads=num_threads)
        return ids
