"""Every private transformers name that hf_bbpe uses, in one module.

:class:`~tokenization_bbpe.BBPETokenizer` subclasses transformers' slow-tokenizer base through
public methods where they exist (``tokenize``, ``convert_tokens_to_ids``,
``convert_ids_to_tokens``, ``get_vocab``, ``get_added_vocab``, ``save_vocabulary``,
``save_pretrained``, ``build_inputs_with_special_tokens``, ``get_special_tokens_mask``,
``create_token_type_ids_from_sequences``, ``prepare_for_tokenization``, ``clean_up_tokenization``)
and the hooks that transformers documents for a ``tokenization_*.py`` (``_tokenize``,
``_convert_token_to_id``, ``_convert_id_to_token``, ``_decode``, ``vocab_size``). What has no
public hook is here, and only here:

* methods overridden (:class:`TransformersHooks`):
  ``_encode_plus`` (4.57 and 5.x: text becomes ids before transformers' per-token path; offsets),
  ``_batch_encode_plus`` (4.57 only; 5.x batches inside ``_encode_plus``),
  ``_add_tokens`` (new ids above every id in use; transformers counts from ``len(get_vocab())``),
  ``_save_pretrained`` (no ``added_tokens.json``: tokenizer_config.json and tokenizer.json hold them);
* keyword names transformers passes to ``_encode_plus``: ``padding_strategy``, ``truncation_strategy``;
* attributes read: ``_added_tokens_decoder``, ``_added_tokens_encoder`` (the live dicts; the
  public ``added_tokens_decoder`` is a sorted copy, too slow for every decode),
  ``_in_target_context_manager``;
* attributes set: ``BatchEncoding._encodings``, ``BatchEncoding._n_sequences`` (a BatchEncoding
  built without its generic constructor, for the direct path; ``_encodings`` also holds token
  spans while ``apply_chat_template`` makes an assistant mask, see encode_outputs.TokenSpans);
* methods called: ``_eventual_warn_about_too_long_sequence``;
* decoding as each version's fast class does it (:func:`cleans_up`, ``DECODE_TAKES_BATCHES``):
  5.x ignores ``clean_up_tokenization_spaces`` for a BPE model unless
  ``clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output`` is set, and its
  ``decode`` takes a batch; 4.57 cleans up when asked and decodes one sequence;
* version quirks of 4.57: the warning "is not the same type as the class" that the logger
  ``transformers.tokenization_utils_base`` logs for our folders' ``PreTrainedTokenizerFast``
  class name, and the ImportError about protobuf that hides an error raised in ``__init__``.

Tested with transformers 4.57.6 and 5.23.0 (the two virtual environments of the test suite).

This module is also copied into model folders as remote code: it imports only flat sibling
modules, relatively, and third-party libraries that transformers already needs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import transformers
from transformers import AddedToken, BatchEncoding, PreTrainedTokenizer

TESTED_TRANSFORMERS = ("4.57.6", "5.23.0")

DECODE_TAKES_BATCHES = int(transformers.__version__.split(".")[0]) >= 5
"""Whether ``decode`` of a list of sequences gives a list of texts (5.x), not an error (4.57)."""

_BPE_CLEAN_UP_FLAG = "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"
_logger = logging.getLogger("transformers.tokenization_utils_tokenizers")
_warned_clean_up: set[str] = set()

SlowTokenizerBase = PreTrainedTokenizer
"""transformers' base class of Python ("slow") tokenizers; 5.x calls it ``PythonBackend`` and
keeps ``PreTrainedTokenizer`` as its alias."""

# a request with any of these is not plain (see is_plain_request)
_NOT_PLAIN = ("return_tensors", "return_overflowing_tokens", "return_special_tokens_mask", "return_offsets_mapping",
              "return_length", "return_token_type_ids", "pad_to_multiple_of", "text_pair")


class TransformersHooks:
    """The private methods of transformers' slow tokenizers that BBPETokenizer overrides.

    Mixed in before the base class; each override hands the work to BBPETokenizer's own methods.
    """

    def _encode_plus(self, text: Any, text_pair: Any = None, **options: Any) -> BatchEncoding:
        # 4.57 and 5.x both turn a str into ids with tokenize + convert_tokens_to_ids; handing
        # them ids instead is the one hook the two share
        base = super()._encode_plus  # type: ignore[misc]
        if options.pop("return_offsets_mapping", False):
            return self._offset_mapping_output(lambda a, b, **o: base(text=a, text_pair=b, **o), (text, text_pair),
                                               options)
        if text_pair is None and _is_text_batch(text) and not options.get("is_split_into_words"):
            text = self._request_inputs(text, options)  # 5.x: a batch comes here whole
        text = self._request_input(text, options)
        if text_pair is None and _is_id_list(text) and is_plain_request(options):
            plain = self._plain_output(text, options)
            if plain is not None:
                return plain
        if text_pair is not None:
            text_pair = self._request_input(text_pair, options)
        return base(text=text, text_pair=text_pair, **options)

    def _batch_encode_plus(self, batch_text_or_text_pairs: Sequence[Any], **options: Any) -> BatchEncoding:
        # transformers 4.57 only; it reads a list or tuple item of a batch as (text, text_pair)
        base = super()._batch_encode_plus  # type: ignore[misc]

        def encode(batch: Sequence[Any], _: Any = None, **more: Any) -> BatchEncoding:
            return base([(item, None) if _is_id_list(item) else item for item in batch], **more)

        if options.pop("return_offsets_mapping", False):
            return self._offset_mapping_output(encode, (batch_text_or_text_pairs, None), options)
        if options.get("is_split_into_words"):
            return base(batch_text_or_text_pairs, **options)
        if _is_text_batch(batch_text_or_text_pairs):
            return encode(self._request_inputs(batch_text_or_text_pairs, options), **options)
        return encode([self._request_input(item, options) if isinstance(item, str)
                       else tuple(self._request_input(text, options) for text in item)
                       for item in batch_text_or_text_pairs], **options)

    def _add_tokens(self, new_tokens: Sequence[str | AddedToken] | None,
                    special_tokens: bool = False) -> int:
        # transformers numbers new tokens from len(get_vocab()); while its _add_tokens runs,
        # get_vocab() also lists the ids planned here (above every id in use), so it takes those
        if not new_tokens:
            return 0
        new_tokens = self._as_added_tokens(new_tokens, special_tokens)
        with self._planning_added_ids(new_tokens) as planned:
            super()._add_tokens(new_tokens, special_tokens=special_tokens)  # type: ignore[misc]
        self._added_tokens_changed()
        return sum(1 for content, idx in planned.items() if added_token_ids(self).get(content) == idx)

    def _save_pretrained(self, save_directory: Any, file_names: tuple[str, ...],
                         legacy_format: bool | None = None, filename_prefix: str | None = None) -> tuple[str, ...]:
        # transformers' version also writes added_tokens.json, which would repeat what
        # tokenizer_config.json's added_tokens_decoder and tokenizer.json already hold
        if legacy_format is False:
            raise ValueError("BBPETokenizer always saves vocab.json + merges.txt beside tokenizer.json")
        return tuple(file_names) + self.save_vocabulary(str(save_directory), filename_prefix=filename_prefix)


def _is_text_batch(item: Any) -> bool:
    """A list or tuple of str only (no pairs): a batch the engine can encode in one call."""
    return type(item) in (list, tuple) and bool(item) and all(type(text) is str for text in item)


def _is_id_list(item: Any) -> bool:
    return type(item) is list and bool(item) and type(item[0]) is int


def is_plain_request(options: Mapping[str, Any]) -> bool:
    """Whether ``_encode_plus`` options ask for input ids (and attention mask) only: no padding,
    truncation, tensors, pairs or extra outputs."""
    if any(map(options.get, _NOT_PLAIN)):
        return False
    for key, plain in (("padding_strategy", "do_not_pad"), ("truncation_strategy", "do_not_truncate")):
        strategy = options.get(key, plain)
        if getattr(strategy, "value", strategy) != plain:
            return False
    return True


def cleans_up(tok: SlowTokenizerBase, clean_up_tokenization_spaces: bool | None) -> bool:
    """Whether ``decode`` cleans up tokenization spaces (``clean_up_tokenization``), as the fast
    class of this transformers version decides it for a BPE model: as asked (or the tokenizer's
    ``clean_up_tokenization_spaces``) on 4.57; on 5.x, which has the rule that the clean-up is
    destructive for BPE, only with ``clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output``
    set, and with the fast class's warning, once, otherwise."""
    if clean_up_tokenization_spaces is None:
        clean_up_tokenization_spaces = tok.clean_up_tokenization_spaces
    if not clean_up_tokenization_spaces:
        return False
    force = getattr(tok, _BPE_CLEAN_UP_FLAG, None)
    if force is None or force:  # 4.57 (no such rule), or 5.x told to clean up anyway
        return True
    name = type(tok).__name__
    if name not in _warned_clean_up:
        _warned_clean_up.add(name)
        _logger.warning(f"Ignoring clean_up_tokenization_spaces=True for BPE tokenizer {name}. The "
                        "clean_up_tokenization post-processing step is designed for WordPiece tokenizers and is "
                        "destructive for BPE (it strips spaces before punctuation). Set "
                        "clean_up_tokenization_spaces=False to suppress this warning, or set "
                        f"{_BPE_CLEAN_UP_FLAG}=True to force cleanup anyway.")
    return False


def added_tokens_by_id(tok: SlowTokenizerBase) -> dict[int, AddedToken]:
    """The tokenizer's live ``{id: AddedToken}`` (empty while transformers' ``__init__`` has not
    made it yet)."""
    return tok.__dict__.get("_added_tokens_decoder") or {}


def added_token_ids(tok: SlowTokenizerBase) -> dict[str, int]:
    """The tokenizer's live ``{content: id}`` of added tokens (empty before ``__init__`` made it)."""
    return tok.__dict__.get("_added_tokens_encoder") or {}


def in_target_context(tok: SlowTokenizerBase) -> bool:
    """Whether ``as_target_tokenizer()`` (a legacy context manager) is active."""
    return bool(getattr(tok, "_in_target_context_manager", False))


def warn_if_too_long(tok: SlowTokenizerBase, ids: list[int], max_length: int | None, verbose: bool) -> None:
    """transformers' one-time warning that a sequence is longer than ``model_max_length``."""
    tok._eventual_warn_about_too_long_sequence(ids, max_length, verbose)


def batch_encoding_of(data: dict[str, list[int]]) -> BatchEncoding:
    """``BatchEncoding(data)`` without its generic constructor (a UserDict update through ABC
    checks and a tensor conversion that does nothing): the same object, built in a fraction of
    the time that ``tokenizer(short_text)`` would otherwise spend on it. A test compares both."""
    encoding = BatchEncoding.__new__(BatchEncoding)
    encoding.data = data
    encoding._encodings = None
    encoding._n_sequences = None
    return encoding


def set_token_encodings(encoding: BatchEncoding, encodings: list[Any] | None) -> None:
    """Give ``encoding`` the per-sequence objects that a fast tokenizer's result holds (None: none)."""
    encoding._encodings = encodings


@contextlib.contextmanager
def loading_saved_folder(portable_class_name: str) -> Iterator[None]:
    """Around ``from_pretrained``: silence 4.57's warning that the folder's class name
    (``portable_class_name``) differs from BBPETokenizer, and show the error that 4.57 hides
    behind an ImportError about protobuf when ``__init__`` raises (it evaluates
    ``except import_protobuf_decode_error()`` then)."""

    def expected_class_warning(record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("is not the same type as the class" in message and f"'{portable_class_name}'" in message)

    base_logger = logging.getLogger("transformers.tokenization_utils_base")
    base_logger.addFilter(expected_class_warning)
    try:
        yield
    except ImportError as exc:
        if "protobuf" in str(exc) and isinstance(exc.__context__, (ValueError, KeyError, OSError)):
            raise exc.__context__ from None
        raise
    finally:
        base_logger.removeFilter(expected_class_warning)
