"""``BBPETokenizer``: the engine as a transformers ``PreTrainedTokenizer`` (4.57 and 5.x).

Tokens are spelled in GPT-2's byte-to-unicode alphabet (``"Ġworld"`` is `` world``), so
``tokenize``, ``convert_tokens_to_ids``, ``convert_tokens_to_string`` and ``decode`` agree, and
``vocab.json``/``merges.txt`` are GPT-2's formats. Text is encoded by the engine's chunk encoder,
a whole stretch at a time between added tokens; transformers' per-token machinery only runs for
``tokenize``.

Added tokens (the engine's special tokens, ``add_tokens``, ``add_special_tokens``) are matched
the way the Rust ``tokenizers`` library matches them, so the ``tokenizer.json`` twin gives the
same ids: special tokens first, then the others, leftmost and longest first, with ``lstrip``,
``rstrip`` and ``single_word`` honoured. ``split_special_tokens=True`` encodes special tokens
that occur in the text as plain text (for untrusted input); new ids always go above the largest
id in use, so holes in the id space are never reused.

A saved folder holds ``vocab.json``, ``merges.txt``, ``tokenizer.json`` (the fast twin, built
by :mod:`tokenizer_json`), ``tokenizer_config.json`` (split pattern, special tokens, added tokens,
chat template) and this module with the engine modules it imports, for
``trust_remote_code=True``. ``tokenizer_config.json`` names ``PreTrainedTokenizerFast`` as the
class, which every transformers version resolves without this package, so
``AutoTokenizer.from_pretrained`` loads the folder anywhere; ``auto_map`` points
``trust_remote_code=True`` at ``BBPETokenizer``.

This module is copied into saved folders as remote code: it imports flat sibling modules only,
relatively, and third-party libraries that transformers already needs.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import regex
from transformers import AddedToken, BatchEncoding, PreTrainedTokenizer

from .atomic_write import write_text_atomic
from .byte_unicode import spell_vocab, unicode_to_token
from .patterns import resolve_pattern
from .tokenizer import Tokenizer
from .tokenizer_json import tokenizer_json_dict
from .vocab_merges_files import read_vocab_merges, split_extra_tokens, write_vocab_merges

if TYPE_CHECKING:
    # transformers 4.57 copies into its module cache only the modules that a remote-code file
    # imports directly (for a local folder), so every module of the engine that this one needs
    # through others is named here too. tests/test_tokenization_bbpe_remote_code.py checks the list.
    from .batch_encoding import encode_batch  # noqa: F401
    from .chunk_counting import count_chunks  # noqa: F401
    from .chunk_encoder import ChunkEncoder  # noqa: F401
    from .merge_loop import train  # noqa: F401
    from .model_file import read_model_file  # noqa: F401
    from .progress import progress_bar  # noqa: F401
    from .special_tokens import special_token_regex  # noqa: F401
    from .trainer import train_merges  # noqa: F401
    from .worker_pool import forked_pool  # noqa: F401

VOCAB_FILES_NAMES = {"vocab_file": "vocab.json", "merges_file": "merges.txt"}
TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
PORTABLE_TOKENIZER_CLASS = "PreTrainedTokenizerFast"
"""The class ``tokenizer_config.json`` names: resolvable by transformers 4.57 and 5.x alike."""

_ADDED_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")
_DIRECT_CALL = frozenset({"add_special_tokens", "return_attention_mask", "split_special_tokens", "verbose"})
_PREFILTER_MAX = 32  # added tokens up to which a substring test runs before the regex
_NOT_PLAIN = ("return_tensors", "return_overflowing_tokens", "return_special_tokens_mask", "return_offsets_mapping",
              "return_length", "pad_to_multiple_of", "text_pair")


class BBPETokenizer(PreTrainedTokenizer):
    """A byte-level BPE tokenizer (GPT-2 / GPT-4 / minbpe algorithm) backed by hf_bbpe's engine.

    Build one with :meth:`from_engine` from a trained engine tokenizer, or load one with
    ``from_pretrained`` from a folder this class saved or from any GPT-2-style folder
    (``vocab.json`` + ``merges.txt``; ``pattern`` defaults to GPT-2's split pattern there).

    Args beyond transformers' usual ones (special tokens, ``model_max_length``, ``chat_template``...):
        vocab_file, merges_file: the GPT-2-style file pair (``from_pretrained`` passes them).
        pattern: split pattern, a registered name ("gpt2", "gpt4", "o200k") or a regex; ``""``
            means no split (minbpe's BasicTokenizer).
        add_bos_token, add_eos_token: put ``bos_token`` / ``eos_token`` around each sequence when
            ``add_special_tokens=True`` (the default of ``tokenizer(...)``).
        bpe_mode: the engine's mode ("merges", "ignore_merges" or "ranks", see
            hf_bbpe/tokenizer.py); saved in tokenizer_config.json, "merges" if absent.
        engine: an engine :class:`Tokenizer` to wrap instead of files (use :meth:`from_engine`).

    Tokens of ``vocab.json`` that no merge builds are special tokens if the saved added tokens
    declare them (or, for a folder that declares none, if spelled ``<...>``/``[...]``), and
    otherwise normal tokens that no merge builds (Llama 3 has 678 of them).
    """

    vocab_files_names = VOCAB_FILES_NAMES
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(
        self,
        vocab_file: str | os.PathLike | None = None,
        merges_file: str | os.PathLike | None = None,
        pattern: str | None = None,
        add_bos_token: bool | None = None,
        add_eos_token: bool | None = None,
        add_prefix_space: bool = False,
        clean_up_tokenization_spaces: bool = False,
        bpe_mode: str | None = None,
        *,
        engine: Tokenizer | None = None,
        **kwargs: Any,
    ) -> None:
        if add_prefix_space:
            raise ValueError("BBPETokenizer does not support add_prefix_space=True: text is encoded as given")
        if engine is not None:
            if vocab_file is not None or merges_file is not None:
                raise ValueError("pass either engine or vocab_file + merges_file, not both")
            core = _copy_engine(engine, pattern, bpe_mode)
            file_specials: dict[str, int] = {}
        elif vocab_file is not None and merges_file is not None:
            files = read_vocab_merges(vocab_file, merges_file)
            saved = kwargs.get("added_tokens_decoder")
            declared = {str(token) if not isinstance(token, dict) else token["content"] for token in saved.values()} \
                if saved else None
            file_specials, unmerged = split_extra_tokens(files.extra_tokens, declared)
            core = Tokenizer.from_merges(files.merges, pattern=_pattern_or_gpt2(pattern), byte_ids=files.byte_ids,
                                         unmerged_tokens=unmerged, mode=bpe_mode or "merges")
        else:
            raise ValueError(
                "BBPETokenizer needs vocab_file and merges_file (from_pretrained passes them), "
                "or an engine tokenizer: BBPETokenizer.from_engine(tok)"
            )
        if add_bos_token is None or add_eos_token is None:
            saved_bos, saved_eos = _bos_eos_from_tokenizer_json(kwargs.get("tokenizer_file"))
            add_bos_token = saved_bos if add_bos_token is None else add_bos_token
            add_eos_token = saved_eos if add_eos_token is None else add_eos_token

        self._engine = core
        self._spelled = spell_vocab(core.vocab, skip=set(core.special_tokens.values()))
        self._token_to_id = {text: idx for idx, text in self._spelled.items()}
        self._max_normal_id = max(self._spelled)
        self._planned_ids: dict[str, int] = {}
        self._matchers: tuple | None = None
        self.add_bos_token = bool(add_bos_token)
        self.add_eos_token = bool(add_eos_token)

        kwargs["added_tokens_decoder"] = self._initial_added_tokens(
            {**file_specials, **core.special_tokens}, kwargs.get("added_tokens_decoder") or {}
        )
        super().__init__(clean_up_tokenization_spaces=clean_up_tokenization_spaces, **kwargs)
        self._register_engine_specials()
        self._special_tokens_as_added_tokens()
        for flag, name in ((self.add_bos_token, "bos_token"), (self.add_eos_token, "eos_token")):
            if flag and getattr(self, name) is None:
                raise ValueError(f"add_{name}=True needs a {name}")

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> BBPETokenizer:
        """transformers' ``from_pretrained``; the folder's ``PreTrainedTokenizerFast`` class name
        is expected, so 4.57's warning that it differs from this class is silenced."""
        base_logger = logging.getLogger("transformers.tokenization_utils_base")
        base_logger.addFilter(_expected_class_warning)
        try:
            return super().from_pretrained(*args, **kwargs)
        except ImportError as exc:
            # 4.57 evaluates `except import_protobuf_decode_error()` when __init__ raises, which
            # without protobuf raises this ImportError and hides the real error: show that one.
            if "protobuf" in str(exc) and isinstance(exc.__context__, (ValueError, KeyError, OSError)):
                raise exc.__context__ from None
            raise
        finally:
            base_logger.removeFilter(_expected_class_warning)

    @classmethod
    def from_engine(cls, tok: Tokenizer, **kwargs: Any) -> BBPETokenizer:
        """Wrap an engine tokenizer (trained, loaded or converted); ``tok`` itself is not changed.

        Its special tokens become special added tokens with the same ids. Named special tokens
        given here (``eos_token="<|endoftext|>"``, ``pad_token="<|pad|>"``...) that the engine
        lacks are added as new special tokens above the largest id in use.
        """
        return cls(engine=tok, **kwargs)

    def _initial_added_tokens(self, specials: Mapping[str, int], saved: Mapping[int, Any]) -> dict[int, AddedToken]:
        """The engine's special tokens as AddedTokens, keeping the flags of a saved entry."""
        decoder: dict[int, AddedToken] = {}
        for idx, token in saved.items():
            token = AddedToken(**token) if isinstance(token, dict) else token
            content = str(token)
            normal = self._spelled.get(int(idx))
            if normal is not None and normal != content:
                raise ValueError(f"added token {content!r} has id {idx}, which is the token {normal!r} in vocab.json")
            decoder[int(idx)] = token
        saved_ids = {str(token): idx for idx, token in decoder.items()}
        for content, idx in specials.items():
            if idx in decoder and str(decoder[idx]) != content:
                raise ValueError(f"special token {content!r} has id {idx}, which the saved added tokens give to "
                                 f"{str(decoder[idx])!r}")
            if saved_ids.get(content, idx) != idx:
                raise ValueError(f"special token {content!r} has id {idx}, but the saved added tokens give it "
                                 f"id {saved_ids[content]}")
            decoder.setdefault(idx, AddedToken(content, special=True, normalized=False))
        return decoder

    # ------------------------------------------------------------------ vocabulary

    @property
    def engine(self) -> Tokenizer:
        """The engine tokenizer inside (special tokens included); treat it as read-only."""
        return self._engine

    @property
    def pattern(self) -> str:
        """The split regex ("" for none)."""
        return self._engine.pattern

    @property
    def vocab_size(self) -> int:
        """One more than the largest id of a token that is not an added token."""
        return self._max_normal_id + 1

    def __len__(self) -> int:
        """One more than the largest id in use: the number of embedding rows a model needs.

        Equal to ``len(get_vocab())`` unless the id space has holes (cl100k, o200k).
        """
        top = self._max_normal_id
        added = self.__dict__.get("_added_tokens_decoder")
        if added:
            top = max(top, max(added))
        if self._planned_ids:
            top = max(top, max(self._planned_ids.values()))
        return top + 1

    def get_vocab(self) -> dict[str, int]:
        vocab = dict(self._token_to_id)
        vocab.update(self.__dict__.get("_added_tokens_encoder") or {})
        vocab.update(self._planned_ids)
        return vocab

    def _add_tokens(self, new_tokens: Sequence[str | AddedToken] | None, special_tokens: bool = False) -> int:
        # transformers numbers new tokens from len(get_vocab()), which lands on ids in use when the
        # id space has holes. Give each new string the next id above everything instead, through
        # get_vocab(), and let transformers do the rest of its bookkeeping.
        if not new_tokens:
            return 0
        known = self.get_vocab()
        next_id = len(self)
        planned: dict[str, int] = {}
        for token in new_tokens:
            content = str(token)
            if content and content not in known and content not in planned:
                planned[content] = next_id
                next_id += 1
        self._planned_ids = planned
        try:
            super()._add_tokens(new_tokens, special_tokens=special_tokens)
        finally:
            self._planned_ids = {}
        if "_engine" in self.__dict__ and "_added_tokens_decoder" in self.__dict__:
            self._register_engine_specials()
        return sum(1 for content, idx in planned.items() if self._added_tokens_encoder.get(content) == idx)

    def _special_tokens_as_added_tokens(self) -> None:
        """Hold named special tokens as their AddedToken, as ``from_pretrained`` leaves them.

        Otherwise a tokenizer built here and the same one loaded back would save different
        special_tokens_map.json files on 4.57 (strings, then dicts).
        """
        by_content = {token.content: token for token in self._added_tokens_decoder.values()}
        table = self._special_tokens_map
        for key, value in list(table.items()):
            if isinstance(value, str) and value in by_content:
                table[key] = by_content[value]
            elif isinstance(value, list):
                table[key] = [by_content.get(item, item) if isinstance(item, str) else item for item in value]
        extras = self.__dict__.get("_extra_special_tokens")
        if extras:
            self._extra_special_tokens = [by_content.get(item, item) if isinstance(item, str) else item
                                          for item in extras]

    def _register_engine_specials(self) -> None:
        """Keep the engine's special tokens equal to the special added tokens (not normal ids)."""
        engine = self._engine
        new = {
            token.content: idx
            for idx, token in self._added_tokens_decoder.items()
            if token.special and idx not in self._spelled and engine.special_tokens.get(token.content) != idx
        }
        if new:
            engine.register_special_tokens(new)

    def _update_trie(self, *args: Any, **kwargs: Any) -> None:
        super()._update_trie(*args, **kwargs)
        self._matchers = None

    def _convert_token_to_id(self, token: str) -> int | None:
        idx = self._token_to_id.get(token)
        if idx is None and self.unk_token is not None and token != str(self.unk_token):
            return self.unk_token_id
        return idx

    def _convert_id_to_token(self, index: int) -> str:
        token = self._spelled.get(index)
        if token is None:
            raise ValueError(f"unknown token id {index!r} (len(tokenizer)={len(self)})")
        return token

    def convert_tokens_to_string(self, tokens: Iterable[str]) -> str:
        """Join tokens back into text: normal tokens are GPT-2 spellings of bytes, added tokens literal."""
        data = bytearray()
        added = self._added_tokens_encoder
        for token in tokens:
            if token in self._token_to_id or token not in added:
                data += unicode_to_token(token)
            else:
                data += token.encode("utf-8")
        return data.decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ encoding

    def _added_token_matchers(self) -> tuple:
        """Regexes for the special added tokens, then the others: ``((regex, ids), ...)``.

        Longest content first, so at a given position the longest token wins, as in ``tokenizers``.
        """
        key = len(self._added_tokens_decoder)
        if self._matchers is not None and self._matchers[0] == key:
            return self._matchers[1]
        groups = []
        for special in (True, False):
            tokens = sorted(
                ((idx, tok) for idx, tok in self._added_tokens_decoder.items() if bool(tok.special) == special),
                key=lambda item: (-len(item[1].content), item[0]),
            )
            if not tokens:
                groups.append(None)
                continue
            alternatives = []
            for _, tok in tokens:
                core = f"({regex.escape(tok.content)})"
                if tok.single_word:
                    core = rf"(?<!\w){core}(?!\w)"
                if tok.lstrip:
                    core = rf"\s*{core}"
                if tok.rstrip:
                    core = rf"{core}\s*"
                alternatives.append(f"(?:{core})")
            contents = tuple(tok.content for _, tok in tokens) if len(tokens) <= _PREFILTER_MAX else ()
            groups.append((regex.compile("|".join(alternatives)), [idx for idx, _ in tokens], contents))
        self._matchers = (key, tuple(groups))
        return self._matchers[1]

    def _encode_text(self, text: str, split_special_tokens: bool = False) -> list[int]:
        """Ids of ``text``: added tokens by id, the stretches between them by the engine."""
        if not text:
            return []
        specials, others = self._added_token_matchers()
        matchers = [m for m in (None if split_special_tokens else specials, others) if m and _may_occur(m, text)]
        if not matchers:  # most texts: no added token in them
            return self._engine.encode_ordinary(text)
        pieces: list[str | int] = [text]
        for matcher in matchers:
            pattern, ids, _ = matcher
            split: list[str | int] = []
            for piece in pieces:
                if not isinstance(piece, str) or not _may_occur(matcher, piece):
                    split.append(piece)
                    continue
                start = 0
                for match in pattern.finditer(piece):
                    if match.start() > start:
                        split.append(piece[start : match.start()])
                    split.append(ids[match.lastindex - 1])
                    start = match.end()
                if start < len(piece):
                    split.append(piece[start:])
            pieces = split
        encode = self._engine.encode_ordinary
        if len(pieces) == 1 and isinstance(pieces[0], str):
            return encode(pieces[0])
        out: list[int] = []
        for piece in pieces:
            if isinstance(piece, str):
                out.extend(encode(piece))
            else:
                out.append(piece)
        return out

    def tokenize(self, text: str, **kwargs: Any) -> list[str]:
        """Split ``text`` into token strings (GPT-2 spellings; added tokens as written)."""
        split_special_tokens = kwargs.pop("split_special_tokens", self.split_special_tokens)
        text, kwargs = self.prepare_for_tokenization(text, **kwargs)
        return self.convert_ids_to_tokens(self._encode_text(text, split_special_tokens))

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        spelled = self._spelled
        return [spelled[idx] for idx in self._engine.encode_ordinary(text)]

    def _pre_encode(self, text: Any, kwargs: Mapping[str, Any]) -> Any:
        """A non-empty str becomes its ids, so transformers skips its per-token path."""
        if isinstance(text, str) and text and not kwargs.get("is_split_into_words") \
                and not kwargs.get("sanitize_control_tokens"):
            return self._encode_text(text, kwargs.get("split_special_tokens", self.split_special_tokens))
        return text

    def __call__(self, text: Any = None, *args: Any, **kwargs: Any) -> BatchEncoding:
        """transformers' ``__call__``; ``tokenizer(text)`` with one str and only the options in
        ``_DIRECT_CALL`` skips its generic argument handling, which costs more than encoding a
        short text (the result is the same; tests compare the two paths)."""
        if (type(text) is str and text and not args and _DIRECT_CALL.issuperset(kwargs)
                and not getattr(self, "_in_target_context_manager", False)):
            split = kwargs.get("split_special_tokens", self.split_special_tokens)
            encoding = self._plain_result(self._encode_text(text, split), kwargs)
            if encoding is not None:
                return encoding
        return super().__call__(text, *args, **kwargs)

    def _encode_plus(self, text: Any, text_pair: Any = None, **kwargs: Any):
        # transformers 4.57 and 5.x both turn a str into ids with tokenize + convert_tokens_to_ids;
        # handing them ids instead is the one hook the two versions share.
        text = self._pre_encode(text, kwargs)
        if text_pair is None and isinstance(text, list) and text and isinstance(text[0], int):
            plain = self._plain_encoding(text, kwargs)
            if plain is not None:
                return plain
        return super()._encode_plus(text=text, text_pair=self._pre_encode(text_pair, kwargs), **kwargs)

    def _plain_encoding(self, ids: list[int], kwargs: Mapping[str, Any]) -> BatchEncoding | None:
        """The result of ``prepare_for_model`` for a request with no padding, truncation, tensors
        or extra outputs (``tokenizer(text)``, and each text of a 5.x batch), built directly: it
        is most of the per-call cost for short texts. None for any other request."""
        if any(map(kwargs.get, _NOT_PLAIN)) or kwargs.get("return_token_type_ids"):
            return None
        for key, plain in (("padding_strategy", "do_not_pad"), ("truncation_strategy", "do_not_truncate")):
            strategy = kwargs.get(key, plain)
            if getattr(strategy, "value", strategy) != plain:
                return None
        return self._plain_result(ids, kwargs)

    def _plain_result(self, ids: list[int], kwargs: Mapping[str, Any]) -> BatchEncoding | None:
        """The BatchEncoding of a plain request (see ``_plain_encoding``); None if the model
        takes token type ids, which the general path makes."""
        if kwargs.get("return_token_type_ids") is None and "token_type_ids" in self.model_input_names:
            return None
        attention = kwargs.get("return_attention_mask")
        if attention is None:
            attention = "attention_mask" in self.model_input_names
        if kwargs.get("add_special_tokens", True) and (self.add_bos_token or self.add_eos_token):
            ids = self.build_inputs_with_special_tokens(ids)  # else ids is already a fresh list
        self._eventual_warn_about_too_long_sequence(ids, kwargs.get("max_length"), kwargs.get("verbose", True))
        return _batch_encoding({"input_ids": ids, "attention_mask": [1] * len(ids)} if attention else {"input_ids": ids})

    def _batch_encode_plus(self, batch_text_or_text_pairs: Sequence[Any], **kwargs: Any):
        # transformers 4.57 only (5.x batches inside _encode_plus). A list item is read as a
        # (text, text_pair) pair there, so a str becomes (ids, None); "" stays for tokenize.
        if not kwargs.get("is_split_into_words"):
            batch = []
            for item in batch_text_or_text_pairs:
                first, second = (item, None) if isinstance(item, str) else item
                first = self._pre_encode(first, kwargs)
                second = self._pre_encode(second, kwargs)
                batch.append(first if isinstance(first, str) and second is None else (first, second))
            batch_text_or_text_pairs = batch
        return super()._batch_encode_plus(batch_text_or_text_pairs, **kwargs)

    def build_inputs_with_special_tokens(self, token_ids_0: list[int], token_ids_1: list[int] | None = None) -> list[int]:
        bos, eos = self._bos_eos_ids()
        ids = bos + token_ids_0 + eos
        if token_ids_1 is not None:
            ids += bos + token_ids_1 + eos
        return ids

    def get_special_tokens_mask(
        self, token_ids_0: list[int], token_ids_1: list[int] | None = None, already_has_special_tokens: bool = False
    ) -> list[int]:
        if already_has_special_tokens:
            return super().get_special_tokens_mask(token_ids_0, token_ids_1, already_has_special_tokens=True)
        bos, eos = self._bos_eos_ids()
        mask = [1] * len(bos) + [0] * len(token_ids_0) + [1] * len(eos)
        if token_ids_1 is not None:
            mask += [1] * len(bos) + [0] * len(token_ids_1) + [1] * len(eos)
        return mask

    def create_token_type_ids_from_sequences(
        self, token_ids_0: list[int], token_ids_1: list[int] | None = None
    ) -> list[int]:
        bos, eos = self._bos_eos_ids()
        first = len(bos) + len(token_ids_0) + len(eos)
        if token_ids_1 is None:
            return [0] * first
        return [0] * first + [1] * (len(bos) + len(token_ids_1) + len(eos))

    def _bos_eos_ids(self) -> tuple[list[int], list[int]]:
        bos = [self.bos_token_id] if self.add_bos_token and self.bos_token_id is not None else []
        eos = [self.eos_token_id] if self.add_eos_token and self.eos_token_id is not None else []
        return bos, eos

    # ------------------------------------------------------------------ decoding

    def _decode(
        self,
        token_ids: int | Sequence[int],
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        **kwargs: Any,
    ) -> str:
        """Bytes of the ids, decoded as UTF-8 (invalid bytes become U+FFFD), as the engine does.

        transformers 4.57's ``spaces_between_special_tokens`` is ignored: the text is exact.
        """
        ids = [token_ids] if isinstance(token_ids, int) else [int(i) for i in token_ids]
        if skip_special_tokens:
            # every added token marked special, as the Rust tokenizer skips them, not only the named ones
            skip = set(self.all_special_ids) | {i for i, tok in self._added_tokens_decoder.items() if tok.special}
            ids = [i for i in ids if i not in skip]
        vocab = self._engine.vocab
        added = self._added_tokens_decoder
        parts = []
        for idx in ids:
            data = vocab.get(idx)
            if data is None:
                token = added.get(idx)
                if token is None:
                    raise ValueError(f"unknown token id {idx!r} (len(tokenizer)={len(self)})")
                data = token.content.encode("utf-8")
            parts.append(data)
        text = b"".join(parts).decode("utf-8", errors="replace")
        if clean_up_tokenization_spaces is None:
            clean_up_tokenization_spaces = self.clean_up_tokenization_spaces
        return self.clean_up_tokenization(text) if clean_up_tokenization_spaces else text

    # ------------------------------------------------------------------ saving

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        """Write ``vocab.json``, ``merges.txt`` and ``tokenizer.json`` (the fast twin)."""
        prefix = f"{filename_prefix}-" if filename_prefix else ""
        directory = Path(save_directory)
        vocab_file = directory / (prefix + VOCAB_FILES_NAMES["vocab_file"])
        merges_file = directory / (prefix + VOCAB_FILES_NAMES["merges_file"])
        json_file = directory / (prefix + TOKENIZER_JSON)
        write_vocab_merges(vocab_file, merges_file, self._spelled, self._engine.merges)
        write_text_atomic(json_file, json.dumps(self.tokenizer_json(), indent=2, ensure_ascii=False) + "\n")
        return (str(vocab_file), str(merges_file), str(json_file))

    def tokenizer_json(self) -> dict[str, Any]:
        """The ``tokenizer.json`` content for this tokenizer, added tokens and bos/eos included."""
        engine_specials = set(self._engine.special_tokens.values())
        extra = [
            {"id": idx, "content": tok.content, **{flag: getattr(tok, flag) for flag in _ADDED_FLAGS}}
            for idx, tok in sorted(self._added_tokens_decoder.items())
            if idx not in engine_specials and idx not in self._spelled
        ]
        data = tokenizer_json_dict(self._engine, added_tokens_extra=extra)
        for entry in data["added_tokens"]:
            token = self._added_tokens_decoder.get(entry["id"])
            if token is not None:
                entry.update({flag: bool(getattr(token, flag)) for flag in _ADDED_FLAGS})
        bos, eos = self._bos_eos_ids()
        if bos or eos:
            data["post_processor"] = {
                "type": "Sequence",
                "processors": [data["post_processor"], self._template_processing(bos, eos)],
            }
        return data

    def _template_processing(self, bos: list[int], eos: list[int]) -> dict[str, Any]:
        def side(type_id: int, sequence: str) -> list[dict[str, Any]]:
            items = [{"SpecialToken": {"id": self.bos_token, "type_id": type_id}}] if bos else []
            items.append({"Sequence": {"id": sequence, "type_id": type_id}})
            if eos:
                items.append({"SpecialToken": {"id": self.eos_token, "type_id": type_id}})
            return items

        named = [(self.bos_token, bos), (self.eos_token, eos)]
        return {
            "type": "TemplateProcessing",
            "single": side(0, "A"),
            "pair": side(0, "A") + side(1, "B"),
            "special_tokens": {token: {"id": token, "ids": ids, "tokens": [token]} for token, ids in named if ids},
        }

    def save_pretrained(
        self,
        save_directory: str | os.PathLike,
        legacy_format: bool | None = None,
        filename_prefix: str | None = None,
        push_to_hub: bool = False,
        **kwargs: Any,
    ) -> tuple[str, ...]:
        """transformers' save, then ``tokenizer_config.json`` rewritten to load on 4.57 and 5.x alike.

        With ``push_to_hub=True`` the folder is saved first and then pushed with ``push_to_hub``
        (``repo_id`` defaults to the folder's name), so the Hub gets the rewritten config.
        """
        if push_to_hub:
            hub_keys = ("repo_id", "commit_message", "private", "token", "create_pr", "revision", "commit_description")
            hub = {key: kwargs.pop(key) for key in hub_keys if key in kwargs}
            files = self.save_pretrained(save_directory, legacy_format, filename_prefix, **kwargs)
            self.push_to_hub(hub.pop("repo_id", Path(save_directory).name), **hub)
            return files
        files = super().save_pretrained(save_directory, legacy_format=legacy_format, filename_prefix=filename_prefix,
                                        **kwargs)
        prefix = f"{filename_prefix}-" if filename_prefix else ""
        self._write_portable_config(Path(save_directory) / (prefix + TOKENIZER_CONFIG))
        return files

    def _write_portable_config(self, config_file: Path) -> None:
        """Rewrite what transformers wrote into the form both majors read.

        5.x writes extra special tokens as a list under ``extra_special_tokens`` (4.57 wants a
        dict there; both read a list under ``additional_special_tokens``), names the class
        ``BBPETokenizer`` (unknown without this package), drops ``add_bos_token``/``add_eos_token``
        and adds a ``backend`` key 4.57 does not know.
        """
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config["tokenizer_class"] = PORTABLE_TOKENIZER_CLASS
        for key in ("backend", "is_local", "local_files_only", "tokenizer_file", "vocab_file", "merges_file"):
            config.pop(key, None)
        extras = config.pop("extra_special_tokens", None)
        if isinstance(extras, list) and extras:
            config["additional_special_tokens"] = extras
        elif isinstance(extras, dict) and extras:
            config["extra_special_tokens"] = extras
        if not config.get("additional_special_tokens"):
            config.pop("additional_special_tokens", None)
        config["pattern"] = self.pattern
        config["bpe_mode"] = self._engine.mode
        config["add_bos_token"] = self.add_bos_token
        config["add_eos_token"] = self.add_eos_token
        config["clean_up_tokenization_spaces"] = bool(self.clean_up_tokenization_spaces)
        write_text_atomic(config_file, json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

    def _save_pretrained(
        self,
        save_directory: str | os.PathLike,
        file_names: tuple[str, ...],
        legacy_format: bool | None = None,
        filename_prefix: str | None = None,
    ) -> tuple[str, ...]:
        # No added_tokens.json: tokenizer_config.json's added_tokens_decoder and tokenizer.json
        # already hold the added tokens with their ids and flags.
        if legacy_format is False:
            raise ValueError("BBPETokenizer always saves vocab.json + merges.txt beside tokenizer.json")
        return tuple(file_names) + self.save_vocabulary(str(save_directory), filename_prefix=filename_prefix)

    # ------------------------------------------------------------------ pickling

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_matchers"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _may_occur(matcher: tuple, text: str) -> bool:
    """Whether an added token of ``matcher`` can occur in ``text``: a substring test per token
    (C speed) that spares most texts the regex scan; always True for long token lists."""
    contents = matcher[2]
    return not contents or any(content in text for content in contents)


def _batch_encoding(data: dict[str, list[int]]) -> BatchEncoding:
    """``BatchEncoding(data)`` without its generic constructor (a UserDict update through ABC
    checks, a tensor conversion that does nothing): the same object, built in a fraction of
    the time that ``tokenizer(short_text)`` would otherwise spend on it. A test compares both."""
    encoding = BatchEncoding.__new__(BatchEncoding)
    encoding.data = data
    encoding._encodings = None
    encoding._n_sequences = None
    return encoding


def _expected_class_warning(record: logging.LogRecord) -> bool:
    """Logging filter: drop 4.57's class-mismatch warning for the class name our folders carry."""
    message = record.getMessage()
    return not ("is not the same type as the class" in message and f"'{PORTABLE_TOKENIZER_CLASS}'" in message)


def _pattern_or_gpt2(pattern: str | None) -> str | None:
    """GPT-2's split pattern unless one is given; ``""`` means no split."""
    if pattern is None:
        return resolve_pattern("gpt2")
    return resolve_pattern(pattern) if pattern else None


def _copy_engine(engine: Tokenizer, pattern: str | None, mode: str | None) -> Tokenizer:
    if pattern is not None and resolve_pattern(pattern or None) != (engine.pattern or None):
        raise ValueError(f"pattern {pattern!r} differs from the engine's split pattern {engine.pattern!r}")
    if mode is not None and mode != engine.mode:
        raise ValueError(f"bpe_mode {mode!r} differs from the engine's mode {engine.mode!r}")
    return Tokenizer.from_merges(
        engine.merges, pattern=engine.pattern or None, special_tokens=engine.special_tokens, byte_ids=engine.byte_ids,
        check=False, unmerged_tokens=engine.unmerged_tokens, mode=engine.mode,
    )


def _bos_eos_from_tokenizer_json(path: str | os.PathLike | None) -> tuple[bool, bool]:
    """Whether the post-processor of a tokenizer.json adds a special token before / after ``$A``.

    transformers 5.x drops ``add_bos_token``/``add_eos_token`` from the config it passes when a
    tokenizer.json exists (that file is its source of truth); read them back from there.
    """
    if path is None or not os.path.isfile(path):
        return False, False
    with open(path, encoding="utf-8") as handle:
        processor = json.load(handle).get("post_processor") or {}
    processors = processor.get("processors", [processor]) if processor.get("type") == "Sequence" else [processor]
    for item in processors:
        if item.get("type") == "TemplateProcessing":
            single = item.get("single") or []
            return (bool(single) and "SpecialToken" in single[0], bool(single) and "SpecialToken" in single[-1])
    return False, False


BBPETokenizer.register_for_auto_class("AutoTokenizer")
