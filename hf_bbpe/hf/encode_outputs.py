"""What :class:`BBPETokenizer` returns for an encode request, beyond turning text into ids:

* the direct result of a plain request (one text, no padding, truncation, tensors or extra
  outputs): built without transformers' ``prepare_for_model``, which is most of the per-call
  cost for short texts (tests compare both paths); a batch's is built with Python's cyclic
  garbage collector paused (:func:`collector_paused`);
* offset mappings: each token's character span in its text, as fast tokenizers return them,
  on transformers 4.57 (whose slow tokenizers refuse them) and 5.x (which drops them silently);
* the same spans where ``apply_chat_template(..., return_assistant_tokens_mask=True)`` reads
  them from a fast tokenizer's encodings (:class:`TokenSpans`).

This module is also copied into model folders as remote code: it imports only flat sibling
modules, relatively, and third-party libraries that transformers already needs.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from transformers import BatchEncoding, PreTrainedTokenizerBase

from .transformers_compat import batch_encoding_of, set_token_encodings, warn_if_too_long

BBPETokenizer = PreTrainedTokenizerBase
"""What these functions take: a BBPETokenizer (named by its base class: tokenization_bbpe.py imports this module)."""
Offsets = list[tuple[int, int]]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a batch's ids and masks are built. Lists of
    ints form no cycle, so there is nothing for it to find, but every list counts toward its next
    collection; in a process that holds transformers' objects, the collections that a batch of
    4 MB of text set off took 1.5-3x as long as encoding it. A collector that was off stays off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def plain_output(tok: BBPETokenizer, ids: list[int], options: Mapping[str, Any]) -> BatchEncoding | None:
    """``prepare_for_model``'s result for the ``ids`` of a plain request (one text; of the
    ``options`` only ``add_special_tokens``, ``return_attention_mask``, ``return_token_type_ids``,
    ``max_length`` and ``verbose`` matter), or None when the model takes token type ids (the
    general path makes those). ``ids`` may be reused in the result."""
    attention = _attention_mask_wanted(tok, options)
    if attention is None:
        return None
    if options.get("add_special_tokens", True) and (tok.add_bos_token or tok.add_eos_token):
        ids = tok.build_inputs_with_special_tokens(ids)
    warn_if_too_long(tok, ids, options.get("max_length"), options.get("verbose", True))
    return batch_encoding_of({"input_ids": ids, "attention_mask": [1] * len(ids)} if attention else {"input_ids": ids})


def plain_batch_output(tok: BBPETokenizer, batch: list[list[int]], options: Mapping[str, Any]) -> BatchEncoding | None:
    """:func:`plain_output` of a batch of plain requests, built as one result (what transformers
    collates from the per-text results) instead of one result per text."""
    attention = _attention_mask_wanted(tok, options)
    if attention is None:
        return None
    if options.get("add_special_tokens", True) and (tok.add_bos_token or tok.add_eos_token):
        batch = [tok.build_inputs_with_special_tokens(ids) for ids in batch]
    if batch:  # transformers warns once, for the first sequence that is too long: the longest tells
        warn_if_too_long(tok, max(batch, key=len), options.get("max_length"), options.get("verbose", True))
    if not attention:
        return batch_encoding_of({"input_ids": batch})
    return batch_encoding_of({"input_ids": batch, "attention_mask": [[1] * len(ids) for ids in batch]})


def _attention_mask_wanted(tok: BBPETokenizer, options: Mapping[str, Any]) -> bool | None:
    """Whether a plain request returns an attention mask, or None when the model takes token type
    ids (the general path makes those)."""
    if options.get("return_token_type_ids") is None and "token_type_ids" in tok.model_input_names:
        return None
    attention = options.get("return_attention_mask")
    return "attention_mask" in tok.model_input_names if attention is None else bool(attention)


def with_offset_mapping(
    tok: BBPETokenizer,
    encode: Callable[..., BatchEncoding],
    request: tuple[Any, Any],
    options: dict[str, Any],
) -> BatchEncoding:
    """Answer a request for ``return_offsets_mapping=True``.

    ``encode(text, text_pair, **options)`` is transformers' own encode step, which also takes
    ids. It runs twice: on the ids of the texts in ``request`` (``(text, text_pair)``, each a
    str, a batch of str or of pairs), and on stand-in ids that number every token (-1, -2, ...),
    whose positions in the result show where each token went through special tokens,
    truncation and padding. Positions transformers added get ``(0, 0)``, as in fast tokenizers;
    a pair's second text has offsets into that text.
    """
    if options.get("is_split_into_words"):
        raise NotImplementedError("BBPETokenizer returns offsets for text, not for words split beforehand "
                                  "(is_split_into_words=True)")
    split_special_tokens = options.get("split_special_tokens", tok.split_special_tokens)
    encoded = [tok._text_ids_and_offsets(text, split_special_tokens) for text in _texts(request)]
    spans: Offsets = [span for _, offsets in encoded for span in offsets]
    stand_ins, first = [], 0
    for ids, _ in encoded:
        stand_ins.append(list(range(-1 - first, -1 - first - len(ids), -1)) if ids else "")
        first += len(ids)
    # "" stays text: transformers tokenizes it to no ids (an empty id list would be an error)
    result = encode(*_with_texts(request, iter([ids or "" for ids, _ in encoded])), **options)
    positions = encode(*_with_texts(request, iter(stand_ins)), **options)["input_ids"]
    positions = positions.tolist() if hasattr(positions, "tolist") else positions
    mapping = _offsets_at(positions, spans)
    tensors = options.get("return_tensors")
    result["offset_mapping"] = BatchEncoding({"m": mapping}, tensor_type=tensors)["m"] if tensors else mapping
    return result


def _offsets_at(positions: Any, spans: Offsets) -> Any:
    """``positions`` (stand-in ids, nested as the result's input_ids) with each stand-in replaced
    by its token's span and every other id by ``(0, 0)``."""
    if positions and isinstance(positions[0], list):
        return [_offsets_at(row, spans) for row in positions]
    return [spans[-1 - idx] if idx < 0 else (0, 0) for idx in positions]


def _texts(request: Any) -> list[str]:
    """Every str in an encode request, in order (a request nests str in lists, tuples and pairs)."""
    if isinstance(request, str):
        return [request]
    if isinstance(request, (list, tuple)):
        if request and all(isinstance(item, int) for item in request):
            raise ValueError("return_offsets_mapping=True needs text: ids have no offsets")
        return [text for item in request for text in _texts(item)]
    if request is None:
        return []
    raise TypeError(f"cannot encode {type(request).__name__} with offsets; expected text")


def _with_texts(request: Any, replacements: Iterator[Any]) -> Any:
    """``request`` with each str replaced by the next of ``replacements`` (same nesting)."""
    if isinstance(request, str):
        return next(replacements)
    if isinstance(request, (list, tuple)):
        return type(request)(_with_texts(item, replacements) for item in request)
    return request



class TokenSpans:
    """One sequence's token offsets, in the two forms transformers reads from a fast tokenizer's
    ``Encoding`` when it makes an assistant mask: ``offsets`` (5.x) and ``char_to_token`` (4.57).
    Tokens transformers added (padding, bos/eos) span ``(0, 0)`` and hold no character."""

    __slots__ = ("offsets",)

    def __init__(self, offsets: Sequence[Sequence[int]]) -> None:
        self.offsets = [(int(start), int(end)) for start, end in offsets]

    def char_to_token(self, char_index: int, sequence_index: int = 0) -> int | None:
        """The index of the first token whose span holds character ``char_index``, or None."""
        for index, (start, end) in enumerate(self.offsets):
            if start <= char_index < end:
                return index
        return None


_TOKEN_SPANS = contextvars.ContextVar("hf_bbpe_token_spans", default=False)


@contextlib.contextmanager
def token_spans_for_masks() -> Iterator[None]:
    """While it is open (in this thread or task), BBPETokenizer's encode calls return
    :class:`TokenSpans` as their encodings (see :func:`with_token_spans`)."""
    reset = _TOKEN_SPANS.set(True)
    try:
        yield
    finally:
        _TOKEN_SPANS.reset(reset)


def token_spans_wanted() -> bool:
    return _TOKEN_SPANS.get()


def with_token_spans(encoding: BatchEncoding, keep_offset_mapping: bool) -> BatchEncoding:
    """``encoding`` (made with ``return_offsets_mapping=True``) with one :class:`TokenSpans` per
    sequence as its encodings; its ``offset_mapping`` is dropped unless ``keep_offset_mapping``."""
    mapping = encoding["offset_mapping"]
    mapping = mapping.tolist() if hasattr(mapping, "tolist") else mapping
    batch = bool(mapping) and isinstance(mapping[0], (list, tuple)) and bool(mapping[0]) \
        and isinstance(mapping[0][0], (list, tuple))
    set_token_encodings(encoding, [TokenSpans(row) for row in (mapping if batch else [mapping])])
    if not keep_offset_mapping:
        del encoding["offset_mapping"]
    return encoding


def drop_token_spans(encoding: BatchEncoding) -> None:
    """Take :func:`with_token_spans`' encodings off again: a Python tokenizer's result has none."""
    set_token_encodings(encoding, None)
