"""Tokenizer half of model surgery: which tokens are new, which old ids seed each one, adding them.

Split in two steps so that every check runs before anything is changed: ``prepare_tokens`` only
reads the tokenizer (and must run before the tokens exist, since "subtoken_mean" encodes each new
token's text with the old vocabulary); ``add_prepared_tokens`` then changes the tokenizer.
Works with any transformers tokenizer, slow or fast, 4.57 or 5.x. No torch here.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Roles a new (or existing) token can be declared as; each sets ``<role>_token`` on the tokenizer
#: and ``<role>_token_id`` in the model config and generation config.
TOKEN_ROLES = ("pad", "bos", "eos")

#: Inits from the rows of the ids each new token's text encodes to with the old tokenizer: their
#: mean (FVT) in every matrix, or in the input rows with damped output rows (row_init.OutputRows).
SUBTOKEN_INITS = ("subtoken_mean", "subtoken_scaled", "subtoken_damped")

#: Values of ``init`` besides an explicit ``{token: [old ids]}`` mapping.
TOKEN_INIT_METHODS = ("mean", *SUBTOKEN_INITS, "normal", "zeros")

InitSpec = str | Mapping[str, Sequence[int]]


@dataclass
class PreparedTokens:
    """The outcome of the checks: what to add, with which sources, and the old sizes."""

    to_add: list[Any]  # str or tokenizers.AddedToken, in request order, deduplicated
    special: list[bool]  # per entry of to_add
    skipped: dict[str, int]  # requested tokens already in the vocabulary -> their id
    again: dict[str, int]  # requested tokens an earlier call added to this model -> their id (a re-run)
    order: list[str]  # the tokens of to_add and again, in request order
    sources: dict[str, tuple[int, ...]]  # token -> old ids whose rows it is initialised from
    roles: dict[str, str]  # role -> token
    method: str  # row init for tokens without sources and for padding rows
    init: str | None  # the init asked for by name (None: a {token: [ids]} mapping)
    old_len: int  # len(tokenizer) before
    old_ids: frozenset[int]


@dataclass
class AddedTokensResult:
    tokens: list[str]
    ids: list[int]
    skipped: dict[str, int]
    sources_by_id: dict[int, tuple[int, ...]]
    role_ids: dict[str, int]
    old_len: int


class NewTokens(list):
    """The ids of the added tokens (a ``list[int]``, in request order), plus what else happened.

    A token that an earlier call added to the same model object is in the list again (a re-run
    notebook cell gets the same ids, for ``train_only_new_tokens``), its rows left as they are.

    Attributes: ``tokens`` (the added tokens, parallel to the ids), ``skipped`` (requested tokens that
    were already in the vocabulary otherwise -> their existing id; a warning names them too), ``role_ids``
    (role -> id), ``num_rows`` (embedding rows afterwards) and ``tokenizer`` (the extended tokenizer:
    the one passed in for in-memory surgery, a new copy for ``extend_checkpoint``).
    """

    tokens: list[str]
    skipped: dict[str, int]
    role_ids: dict[str, int]
    num_rows: int
    tokenizer: Any

    def __init__(self, added: AddedTokensResult, num_rows: int, tokenizer: Any) -> None:
        super().__init__(added.ids)
        self.tokens = list(added.tokens)
        self.skipped = dict(added.skipped)
        self.role_ids = dict(added.role_ids)
        self.num_rows = num_rows
        self.tokenizer = tokenizer

    def __repr__(self) -> str:
        added = dict(zip(self.tokens, self, strict=True))
        return f"NewTokens({added}, skipped={self.skipped}, num_rows={self.num_rows})"


def subtoken_sources(tokenizer: Any, tokens: Sequence[str]) -> dict[str, list[int]]:
    """For each token, the ids its text encodes to with ``tokenizer`` (call it before adding them).

    This is the mapping ``init="subtoken_mean"`` uses: a new row becomes the mean of those rows,
    which places a new word where its pieces already point. Tokens that encode to nothing are left
    out (they fall back to the plain mean).
    """
    result: dict[str, list[int]] = {}
    for token in tokens:
        text = str(token)
        ids = list(tokenizer.encode(text, add_special_tokens=False))
        if ids:
            result[text] = [int(i) for i in ids]
    return result


def _token_text(token: Any) -> str:
    text = token if isinstance(token, str) else getattr(token, "content", None)
    if not isinstance(text, str) or not text:
        raise ValueError(f"a token must be a non-empty str or tokenizers.AddedToken, got {token!r}")
    return text


MAX_EMBEDDING_ROWS = 2**31 - 1
"""The most embedding rows surgery plans for (2**31 rows of even 1024 float16 values are 4 TiB)."""


def prepare_tokens(
    tokenizer: Any,
    tokens: Sequence[Any],
    *,
    special: bool,
    init: InitSpec,
    roles: Mapping[str, str] | None,
    num_rows: int,
    added_before: Mapping[int, bytes] | None = None,
) -> PreparedTokens:
    """Validate a request against ``tokenizer`` and a model with ``num_rows`` embedding rows.

    ``added_before`` holds the rows earlier calls added to this model (id -> the token's bytes):
    a requested token already in the vocabulary on such a row of its own is a re-run, given back
    with the new tokens rather than skipped. Raises ValueError naming the offending token, role or
    id; changes nothing.
    """
    if isinstance(tokens, (str, bytes)):
        raise TypeError("tokens must be a list of strings, not a single string")
    tokens = list(tokens)
    roles = dict(roles or {})
    for role, token in roles.items():
        if role not in TOKEN_ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {TOKEN_ROLES}")
        _token_text(token)

    vocab = tokenizer.get_vocab()
    old_len = len(tokenizer)
    if old_len > MAX_EMBEDDING_ROWS:
        top = old_len - 1
        raise ValueError(f"the tokenizer's token {tokenizer.convert_ids_to_tokens(top)!r} has id {top}, so a model "
                         f"would need {old_len} embedding rows; surgery takes at most {MAX_EMBEDDING_ROWS} "
                         "(2**31 - 1): no model has that many rows (tiktoken ranks go up to 2**32 - 1)")
    requested: list[Any] = []
    seen: set[str] = set()
    for token in tokens + list(roles.values()):
        text = _token_text(token)
        if text not in seen:
            seen.add(text)
            requested.append(token)

    role_tokens = set(roles.values())
    asked = {_token_text(t) for t in tokens}
    # A requested token that an earlier call added (a re-run) is given back with the new ones;
    # another one already in the vocabulary is skipped; a role naming an existing token (say
    # pad = the eos token) only declares the role.
    added_before = added_before or {}
    again = {t: int(vocab[t]) for t in map(_token_text, requested)
             if t in vocab and added_before.get(int(vocab[t])) == t.encode("utf-8")}
    skipped = {t: int(vocab[t]) for t in map(_token_text, requested) if t in vocab and t in asked and t not in again}
    to_add = [t for t in requested if _token_text(t) not in vocab]
    order = [t for t in map(_token_text, requested) if t in again or t not in vocab]
    texts = [_token_text(t) for t in to_add]
    notes = [f"token {t!r} is already in the vocabulary (id {i}); not adding it" for t, i in skipped.items()]

    if isinstance(init, str):
        if init not in TOKEN_INIT_METHODS:
            raise ValueError(
                f"unknown init {init!r}; expected one of {TOKEN_INIT_METHODS} or a {{token: [ids]}} mapping"
            )
        method = init if init not in SUBTOKEN_INITS else "mean"
        if init in SUBTOKEN_INITS:
            found = subtoken_sources(tokenizer, texts)
            notes += [f"token {t!r} encodes to no ids; it gets the plain mean" for t in texts if t not in found]
            sources = {t: tuple(ids) for t, ids in found.items()}
        else:
            sources = {}
    elif isinstance(init, Mapping):
        method = "mean"
        requested_texts = {_token_text(t) for t in requested}
        sources = {}
        for text, ids in init.items():
            if text not in requested_texts:
                raise ValueError(f"init names token {text!r}, which is not among the tokens to add")
            if text in skipped:
                continue
            if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
                raise ValueError(f"init[{text!r}] must be a list of old token ids, got {ids!r}")
            sources[text] = tuple(int(i) for i in ids)
    else:
        raise TypeError(f"init must be a str or a {{token: [ids]}} mapping, got {type(init).__name__}")

    for text, ids in sources.items():
        for i in ids:
            if not 0 <= i < num_rows:
                raise ValueError(f"token {text!r}: source id {i} has no row in the model ({num_rows} rows)")
    for note in notes:  # only once the request is known to be valid
        warnings.warn(note, stacklevel=3)

    return PreparedTokens(
        to_add=to_add,
        special=[special or t in role_tokens for t in texts],
        skipped=skipped,
        again=again,
        order=order,
        sources=sources,
        roles=roles,
        method=method,
        init=init if isinstance(init, str) else None,
        old_len=old_len,
        old_ids=frozenset(int(i) for i in vocab.values()),
    )


def expected_owners(prepared: PreparedTokens) -> dict[int, bytes]:
    """The ids the tokenizer will give the prepared tokens, with their bytes, before adding them.

    transformers numbers added tokens from ``len(tokenizer)`` up in the order they are added, so
    rows can be checked before the tokenizer changes; :func:`added_owners` gives the real ids after.
    """
    return {prepared.old_len + k: _token_text(t).encode("utf-8") for k, t in enumerate(prepared.to_add)}


def added_owners(added: AddedTokensResult) -> dict[int, bytes]:
    """The ids the tokenizer gave the added tokens, with their bytes."""
    return {i: text.encode("utf-8") for i, text in zip(added.ids, added.tokens, strict=True)}


def add_prepared_tokens(tokenizer: Any, prepared: PreparedTokens) -> AddedTokensResult:
    """Add the prepared tokens to ``tokenizer`` in request order and declare the roles."""
    run: list[Any] = []
    run_special = False

    def flush() -> None:
        if not run:
            return
        if run_special:
            # Positional second argument: `replace_additional_special_tokens` in 4.x, renamed
            # `replace_extra_special_tokens` in 5.x; False keeps the existing ones.
            tokenizer.add_special_tokens({"additional_special_tokens": list(run)}, False)
        else:
            tokenizer.add_tokens(list(run))
        run.clear()

    for token, is_special in zip(prepared.to_add, prepared.special, strict=True):
        if run and is_special != run_special:
            flush()
        run_special = is_special
        run.append(token)
    flush()
    for role, token in prepared.roles.items():
        tokenizer.add_special_tokens({f"{role}_token": token})

    texts = [_token_text(t) for t in prepared.to_add]
    ids = [tokenizer.convert_tokens_to_ids(t) for t in texts]
    for text, token_id in zip(texts, ids, strict=True):
        if not isinstance(token_id, int) or token_id in prepared.old_ids:
            raise RuntimeError(f"the tokenizer did not give {text!r} a new id (got {token_id!r})")
    if len(set(ids)) != len(ids):
        raise RuntimeError(f"the tokenizer gave the new tokens duplicate ids: {dict(zip(texts, ids, strict=True))}")
    role_ids = {role: int(tokenizer.convert_tokens_to_ids(_token_text(t))) for role, t in prepared.roles.items()}
    sources_by_id = {i: prepared.sources[t] for t, i in zip(texts, ids, strict=True) if t in prepared.sources}
    given = {**prepared.again, **dict(zip(texts, map(int, ids), strict=True))}
    return AddedTokensResult(
        tokens=list(prepared.order),
        ids=[given[t] for t in prepared.order],
        skipped=dict(prepared.skipped),
        sources_by_id=sources_by_id,
        role_ids=role_ids,
        old_len=prepared.old_len,
    )


def rows_needed(tokenizer: Any, ids: Sequence[int], old_rows: int, pad_to_multiple_of: int | None) -> int:
    """Rows the model needs after adding: never fewer than it has, at least len(tokenizer)."""
    check_pad_multiple(pad_to_multiple_of)
    rows = max([old_rows, len(tokenizer)] + [i + 1 for i in ids])
    if pad_to_multiple_of is not None:
        rows = -(-rows // pad_to_multiple_of) * pad_to_multiple_of
    return rows


def check_pad_multiple(pad_to_multiple_of: int | None) -> None:
    if pad_to_multiple_of is not None and (
        isinstance(pad_to_multiple_of, bool) or not isinstance(pad_to_multiple_of, int) or pad_to_multiple_of < 1
    ):
        raise ValueError(f"pad_to_multiple_of must be a positive int or None, got {pad_to_multiple_of!r}")
