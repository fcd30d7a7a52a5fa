"""Model surgery: add tokens, grow the embedding and LM head, train only the new rows, on loaded
models and directly on safetensors checkpoints too big to load.

    from hf_bbpe import surgery
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, ["<|im_start|>", "<|im_end|>"],
                                            special=True, init="mean", roles={"eos": "<|im_end|>"})
    handle = surgery.train_only_new_tokens(model, new_ids)   # everything else frozen
    ...train...
    handle.remove()
    surgery.extend_checkpoint("ckpt_dir", "out_dir", tokenizer, ["<|im_start|>"], special=True)

Guarantees: old rows and every other parameter are bit-identical (so logits over the old
vocabulary are equal up to float rounding: the head's product on the new shape may use another
BLAS kernel, about 1e-8 apart for a 1-token input in float32), tied weights stay tied, ``len(tokenizer) <= rows`` (equal without padding), and
``config.vocab_size`` follows. In-memory and checkpoint surgery with the same arguments give
identical tensors. Needs the torch extra: ``pip install 'hf_bbpe[torch]'``.

``init`` (for the embedding rows and, separately, the LM head rows and bias; docs/extension.md's
"Which init" table says when to use which):

* ``"mean"``: the mean of the old vocabulary's rows (not transformers' covariance sampling, which
  costs seconds on a 32k x 2048 matrix and is noise around the same mean);
* ``"subtoken_mean"`` (FVT): per new token, the mean of the rows of the ids its text encodes to
  with the old tokenizer (right for new words);
* ``"subtoken_scaled"``, ``"subtoken_damped"``: the same in the input rows; in the output rows
  (LM head and bias, or an embedding tied to the head) that mean halved, or pulled 20% toward
  the mean row, so that the new tokens' logits start lower (``SUBTOKEN_OUTPUT_ROWS``);
* ``"normal"``: N(0, std of the old rows), drawn from ``seed``;
* ``"zeros"``;
* a mapping ``{token: [old ids]}``: the mean of those rows (tokens not in it get ``"mean"``).
  ``"subtoken_mean"`` is the mapping :func:`subtoken_sources` builds. :func:`resize_embeddings`
  takes the same by row id.

After vocabulary extension (``Tokenizer.extend``), :func:`resize_for_extension` grows the model
for the new merges, each initialised from its old sub-tokens (or its two parents' rows).

Padding rows (``pad_to_multiple_of``) get ``init`` when it is "mean"/"normal"/"zeros", else the mean.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

try:
    import torch
except ImportError as exc:  # torch is an optional extra
    raise ImportError("hf_bbpe.surgery needs PyTorch: pip install 'hf_bbpe[torch]'") from exc

from .checkpoint import extend_checkpoint
from .embedding_resize import embedding_modules, grow_model_rows, set_token_roles
from .new_token_training import NewTokenTraining, train_only_new_tokens
from .row_init import ROW_INIT_METHODS, SUBTOKEN_OUTPUT_ROWS, OutputRows, RowPlan, output_rows_for, plan_for_tokens
from .row_owners import model_row_owners, record_row_owners, recorded_row_owners, rows_to_keep
from .token_adding import (
    SUBTOKEN_INITS,
    TOKEN_INIT_METHODS,
    TOKEN_ROLES,
    InitSpec,
    NewTokens,
    add_prepared_tokens,
    added_owners,
    check_pad_multiple,
    expected_owners,
    prepare_tokens,
    rows_needed,
    subtoken_sources,
)

__all__ = [
    "NewTokens",
    "NewTokenTraining",
    "OutputRows",
    "ROW_INIT_METHODS",
    "SUBTOKEN_INITS",
    "SUBTOKEN_OUTPUT_ROWS",
    "TOKEN_INIT_METHODS",
    "TOKEN_ROLES",
    "add_tokens_and_resize",
    "extend_checkpoint",
    "resize_embeddings",
    "resize_for_extension",
    "EXTENSION_DEFAULT_INIT",
    "EXTENSION_INIT_METHODS",
    "subtoken_sources",
    "train_only_new_tokens",
]


def add_tokens_and_resize(
    model: torch.nn.Module,
    tokenizer: Any,
    tokens: Sequence[str],
    *,
    special: bool = False,
    init: InitSpec = "mean",
    pad_to_multiple_of: int | None = None,
    roles: Mapping[str, str] | None = None,
    seed: int = 0,
) -> NewTokens:
    """Add ``tokens`` to ``tokenizer`` and grow ``model``'s input embedding and LM head to match.

    ``special=True`` adds them as special tokens (never split, skipped by ``decode(...,
    skip_special_tokens=True)``). ``roles`` declares tokens as ``"pad"``, ``"bos"`` or ``"eos"``
    (e.g. ``{"pad": "<|pad|>"}``): the tokenizer's ``pad_token`` and the config's and generation
    config's ``pad_token_id`` are set; a role token not in ``tokens`` is added (as special) unless
    it already exists. Tokens already in the vocabulary are skipped with a warning and listed in
    ``.skipped`` of the result, except those an earlier call added to this model object: a re-run
    cell gets their ids again (rows untouched), so ``train_only_new_tokens(model, new_ids)`` works
    on the re-run too. Everything is checked before the tokenizer or the model changes.

    Works on any model whose ``get_input_embeddings()`` / ``get_output_embeddings()`` hold
    [vocab, hidden] weights: tied (GPT-2), untied (Llama with ``tie_word_embeddings=False``), heads
    with a bias. Rows are never removed; rows of ids the old tokenizer could not produce (padding
    rows beyond ``len(tokenizer)``) are reused for new ids and re-initialised.

    Rows that already belong to a token are never re-initialised (see ``row_owners``): calling
    this again with a tokenizer that lacks the tokens (a re-run notebook cell that reloaded it)
    adds them to the tokenizer at the same ids and leaves their rows, trained or not, exactly as
    they are; a row that belongs to another token raises ValueError before anything changes.
    """
    emb, _ = embedding_modules(model)
    rows = emb.weight.shape[0]
    check_pad_multiple(pad_to_multiple_of)
    prepared = prepare_tokens(tokenizer, tokens, special=special, init=init, roles=roles, num_rows=rows,
                              added_before=recorded_row_owners(model))
    rows_to_keep(expected_owners(prepared), rows, lambda: model_row_owners(model))  # raises before any change
    added = add_prepared_tokens(tokenizer, prepared)
    keep = rows_to_keep(added_owners(added), rows, lambda: model_row_owners(model))
    new_rows = rows_needed(tokenizer, added.ids, rows, pad_to_multiple_of)
    to_init = [i for i in added.ids if i not in keep]
    plan = plan_for_tokens(rows, new_rows, min(rows, added.old_len), prepared.method, to_init, added.sources_by_id,
                           output_rows_for(prepared.init))
    grow_model_rows(model, plan, seed)
    record_row_owners(model, added_owners(added))
    set_token_roles(model, added.role_ids)
    return NewTokens(added, new_rows, tokenizer)


def resize_embeddings(
    model: torch.nn.Module,
    num_rows: int,
    *,
    sources: Mapping[int, Sequence[int] | Mapping[int, float]] | None = None,
    init: str = "mean",
    reference_rows: int | None = None,
    seed: int = 0,
) -> None:
    """Grow embedding and LM head to ``num_rows`` rows, for callers that changed the tokenizer
    themselves (e.g. vocabulary extension with new merges).

    ``sources`` maps a row id to the old ids whose mean it gets (an empty list means ``init``), or
    to ``{old id: weight}`` for a weighted mean;
    listed rows below the current size are re-initialised. Every other new row gets ``init``
    ("mean", "normal", "zeros"), from the statistics of the first ``reference_rows`` rows (default:
    all current rows; pass the old ``len(tokenizer)`` to ignore unused padding rows).
    """
    emb, _ = embedding_modules(model, need_head=False)
    rows = emb.weight.shape[0]
    plan = RowPlan(
        old_rows=rows,
        new_rows=int(num_rows),
        reference_rows=rows if reference_rows is None else min(rows, int(reference_rows)),
        method=init,
        sources={int(r): _sources(srcs) for r, srcs in (sources or {}).items()},
    )
    grow_model_rows(model, plan, seed)


#: Initialisations of :func:`resize_for_extension`: each new merge's two parents, or its sub-tokens.
EXTENSION_INIT_METHODS = ("parents", *SUBTOKEN_INITS, *ROW_INIT_METHODS)

#: The default of :func:`resize_for_extension`; ``scripts/bench_extension_model.py`` measures every init against it.
EXTENSION_DEFAULT_INIT = "subtoken_scaled"


def resize_for_extension(
    model: torch.nn.Module,
    base: Any,
    extended: Any,
    *,
    init: str = EXTENSION_DEFAULT_INIT,
    seed: int = 0,
) -> list[int]:
    """Grow ``model`` for the tokens that vocabulary extension (``base.extend(...)``) added.

    ``base`` is the tokenizer the model was trained with, ``extended`` the result of extending it
    (engine tokenizers, or :class:`BBPETokenizer` wrapping them). Each new merged token's rows
    (embedding, LM head, head bias) are initialised by ``init``:

    * ``"parents"``: the mean of its two parents' rows; a parent that is itself new stands for its
      own parents in turn, so the row is a weighted mean of old rows (halves, quarters, ...);
    * ``"subtoken_mean"`` (FVT): the mean of the rows of the old tokens ``base`` spells its bytes with;
    * ``"subtoken_scaled"``, ``"subtoken_damped"``: that mean in the input embedding; in the output
      rows (LM head and bias, or a tied embedding) halved, or pulled 20% toward the mean row;
    * ``"mean"``, ``"normal"``, ``"zeros"``: as in :func:`add_tokens_and_resize`.

    New special tokens get the plain mean. Returns the new ids, ascending; afterwards the model
    has at least ``len(BBPETokenizer.from_engine(extended))`` rows. Raises ValueError if
    ``extended`` does not keep every id and merge of ``base``, or if the model has fewer rows than
    ``base`` has ids.

    Rows the model already has for new ids are never re-initialised if they may hold trained
    values. Calling this again on the same model object (a re-run notebook cell) leaves the rows
    of the same tokens exactly as they are and returns the same ids; a row that an earlier call
    initialised for another token raises ValueError. Without such a record (a model loaded from
    disk), a model with exactly as many rows as the extended vocabulary needs is taken to be
    extended already: its rows are left alone, with a warning. Otherwise new ids that fall on
    existing rows are padding rows of the base model (say 50,304 rows for GPT-2's 50,257 ids),
    and are initialised.
    """
    if init not in EXTENSION_INIT_METHODS:
        raise ValueError(f"unknown init {init!r}; expected one of {EXTENSION_INIT_METHODS}")
    old, new = getattr(base, "engine", base), getattr(extended, "engine", extended)
    old_vocab, new_vocab = old.vocab, new.vocab
    changed = next((i for i, data in old_vocab.items() if new_vocab.get(i) != data), None)
    if changed is not None:
        raise ValueError(f"extended tokenizer changes id {changed} ({old_vocab[changed]!r}): not an extension of base")
    if any(new.merges.get(pair) != idx for pair, idx in old.merges.items()):
        raise ValueError("extended tokenizer drops or renumbers merges of base: not an extension of base")
    new_ids = sorted(set(new_vocab) - set(old_vocab))
    emb, _ = embedding_modules(model, need_head=False)
    rows = emb.weight.shape[0]
    if rows <= max(old_vocab):
        raise ValueError(
            f"the model has {rows} embedding rows, but base uses ids up to {max(old_vocab)}: "
            "it is not the model that goes with base"
        )
    reference_rows = min(rows, max(old_vocab) + 1)
    owners = {i: new_vocab[i] for i in new_ids}
    keep = rows_to_keep(owners, rows, lambda: model_row_owners(model))
    unknown = [i for i in new_ids if i < rows and i not in keep]
    if unknown and rows == max(new_vocab) + 1:
        warnings.warn(
            f"the model has exactly the {rows} rows of the extended vocabulary, and {len(unknown)} of the new "
            "ids have rows that no earlier call on this model object initialised: taking the model to be "
            "extended already (saved and loaded since?) and leaving those rows as they are",
            stacklevel=2,
        )
        keep.update(unknown)
    sources: dict[int, Mapping[int, float] | tuple[int, ...]] = {}
    if init == "parents":
        weights: dict[int, dict[int, float]] = {}
        for (a, b), idx in sorted(new.merges.items(), key=lambda item: item[1]):
            if idx in old_vocab:
                continue
            mix: dict[int, float] = {}
            for parent in (a, b):
                for src, w in weights.get(parent, {parent: 1.0}).items():
                    mix[src] = mix.get(src, 0.0) + w / 2
            weights[idx] = mix
        sources.update(weights)
    elif init in SUBTOKEN_INITS:
        merged = set(new.merges.values())
        sources.update({idx: tuple(old.encode_single_piece(new_vocab[idx])) for idx in new_ids if idx in merged})
    method = init if init in ROW_INIT_METHODS else "mean"
    num_rows = max(rows, max(new_ids, default=-1) + 1)
    plan = RowPlan(old_rows=rows, new_rows=num_rows, reference_rows=reference_rows, method=method,
                   sources={i: sources.get(i, ()) for i in new_ids if i not in keep}, output_rows=output_rows_for(init))
    grow_model_rows(model, plan, seed)
    record_row_owners(model, owners)
    return new_ids


def _sources(srcs: Sequence[int] | Mapping[int, float]) -> tuple[int, ...] | dict[int, float]:
    if isinstance(srcs, Mapping):
        return {int(src): float(weight) for src, weight in srcs.items()}
    return tuple(int(src) for src in srcs)
