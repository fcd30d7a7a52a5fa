"""``BBPETokenizer``: the engine as a transformers slow tokenizer (4.57 and 5.x).

Tokens are spelled in GPT-2's byte-to-unicode alphabet (``"Ġworld"`` is `` world``), so
``tokenize``, ``convert_tokens_to_ids``, ``convert_tokens_to_string`` and ``decode`` agree, and
``vocab.json``/``merges.txt`` are GPT-2's formats. Text is encoded by the engine's chunk encoder,
a whole stretch at a time between added tokens; transformers' per-token machinery only runs for
``tokenize``.

The class keeps to transformers' public methods and the hooks it documents for a
``tokenization_*.py``; the few private ones it needs are overridden or read in
transformers_compat.py, and nowhere else. Its other jobs live in sibling modules:
added_tokens.py (matching added tokens as the Rust ``tokenizers`` library does, numbering new
ones), encode_outputs.py (the direct result of a plain request, offset mappings) and
saved_folder.py (tokenizer.json, the portable tokenizer_config.json, the remote code).

A saved folder holds ``vocab.json``, ``merges.txt``, ``tokenizer.json`` (the fast twin) and
``tokenizer_config.json`` (split pattern, special tokens, added tokens, chat template): the files
of any tokenizer repository, and no code. ``tokenizer_config.json`` names
``PreTrainedTokenizerFast`` as the class, which every transformers version resolves without this
package, so ``AutoTokenizer.from_pretrained`` loads the folder anywhere. With
``save_pretrained(..., remote_code=True)`` the folder also carries this module and what it imports
(remote_code.py), and ``auto_map`` points ``trust_remote_code=True`` at ``BBPETokenizerFast``
(below: the same ``tokenizer.json`` in transformers' fast class) and, with ``use_fast=False`` on
4.57, at ``BBPETokenizer``. Hence its imports are relative, and of third-party libraries only
those transformers already needs.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import AddedToken, BatchEncoding, PreTrainedTokenizerFast

from ..engine.chunking.byte_unicode import spell_vocab, unicode_to_token
from ..engine.chunking.normalizers import original_span, resolve_normalizer
from ..engine.chunking.patterns import resolve_pattern
from ..engine.chunking.pre_tokenizers import resolve_pre_tokenizer
from ..engine.encoding.special_tokens import TokenRoles, is_reserved_token
from ..engine.encoding.token_ids import single_token_id, token_id_list
from ..engine.files.atomic_write import write_text_atomic
from ..engine.files.vocab_merges import read_vocab_merges, split_extra_tokens, write_vocab_merges
from ..engine.tokenizer import Tokenizer
from ..engine.worker_pool import available_cpus
from .added_tokens import (
    AddedTokenMatcher,
    ids_above,
    initial_added_tokens,
    not_normalized,
    refuse_id_holes,
    reserved_tokens_for_holes,
)
from .chat_presets import chat_preset as resolve_chat_preset
from .decode_outputs import DecodePaths, one_sequence, sequence_batch
from .encode_outputs import (
    Offsets,
    collector_paused,
    drop_token_spans,
    plain_batch_output,
    plain_output,
    token_spans_for_masks,
    token_spans_wanted,
    with_offset_mapping,
    with_token_spans,
)
from .portable_folder import PortableFolder
from .saved_folder import (
    PORTABLE_TOKENIZER_CLASS,
    TOKENIZER_JSON,
    adds_prefix_space,
    bos_eos_from_tokenizer_json,
    copy_slow_files,
    fast_twin_json,
    finish_saved_folder,
    recover_and_check,
)
from .transformers_compat import (
    DECODE_TAKES_BATCHES,
    SlowTokenizerBase,
    TransformersHooks,
    added_token_ids,
    added_tokens_by_id,
    cleans_up,
    in_target_context,
    loading_saved_folder,
)


VOCAB_FILES_NAMES = {"vocab_file": "vocab.json", "merges_file": "merges.txt"}
# tokenizer(text) with only these options takes the direct path (see __call__)
_DIRECT_CALL = frozenset({"add_special_tokens", "return_attention_mask", "split_special_tokens", "verbose"})


class BBPETokenizer(PortableFolder, TransformersHooks, SlowTokenizerBase):
    """A byte-level BPE tokenizer (GPT-2 / GPT-4 / minbpe algorithm) backed by hf_bbpe's engine.

    Build one with :meth:`from_engine` from a trained engine tokenizer, or load one with
    ``from_pretrained`` from a folder this class saved or from any GPT-2-style folder
    (``vocab.json`` + ``merges.txt``; ``pattern`` defaults to GPT-2's split pattern there).

    Args beyond transformers' usual ones (special tokens, ``model_max_length``, ``chat_template``...):
        vocab_file, merges_file: the GPT-2-style file pair (``from_pretrained`` passes them).
        pattern: split pattern, a registered name ("gpt2", "gpt4", "o200k") or a regex; ``""``
            means no split (minbpe's BasicTokenizer).
        pre_tokenizer: a pre-tokenizer pipeline instead of ``pattern`` (pre_tokenizers.py; its
            JSON form in ``tokenizer_config.json``).
        normalizer: ``"NFC"``, ``"NFKC"``, ``"NFD"``, ``"NFKD"``, a sequence, or a JSON form
            (normalizers.py): applied to text before it is split, as in ``tokenizers``.
        add_bos_token, add_eos_token: put ``bos_token`` / ``eos_token`` around each sequence when
            ``add_special_tokens=True`` (the default of ``tokenizer(...)``).
        bpe_mode: the engine's mode ("merges", "ignore_merges" or "ranks", see
            hf_bbpe/engine/tokenizer.py); saved in tokenizer_config.json, "merges" if absent.
        engine: an engine :class:`Tokenizer` to wrap instead of files (use :meth:`from_engine`).
        chat_preset: a chat-template preset of chat_presets.py (``"chatml"``): its template (with
            ``{% generation %}`` markers), its special tokens (added if missing) and its
            end-of-turn token among ``stop_tokens``.
        stop_tokens: tokens that end a turn; ``save_pretrained`` writes their ids (then
            ``eos_token``'s) as ``eos_token_id`` in ``generation_config.json``.

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
        pre_tokenizer: Mapping[str, Any] | None = None,
        normalizer: str | Mapping[str, Any] | None = None,
        chat_preset: str | None = None,
        stop_tokens: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if engine is not None:
            if vocab_file is not None or merges_file is not None:
                raise ValueError("pass either engine or vocab_file + merges_file, not both")
            core = _copy_engine(engine, pattern, pre_tokenizer, normalizer, bpe_mode)
            file_specials: dict[str, int] = {}
            roles = engine.roles.as_kwargs()  # the owner's BOS/EOS/pad and add-BOS rule, unless given here
            add_bos_token = roles.pop("add_bos_token", False) if add_bos_token is None else add_bos_token
            add_eos_token = roles.pop("add_eos_token", False) if add_eos_token is None else add_eos_token
            for name in TokenRoles.NAMES:
                if name in roles:
                    kwargs.setdefault(name, roles[name])
        elif vocab_file is not None and merges_file is not None:
            files = read_vocab_merges(vocab_file, merges_file)
            saved = kwargs.get("added_tokens_decoder")
            declared = {str(token) if not isinstance(token, dict) else token["content"] for token in saved.values()} \
                if saved else None
            file_specials, unmerged = split_extra_tokens(files.extra_tokens, declared)
            split = {"pre_tokenizer": pre_tokenizer} if pre_tokenizer is not None else {"pattern": _pattern_or_gpt2(pattern)}
            core = Tokenizer.from_merges(files.merges, byte_ids=files.byte_ids, normalizer=normalizer,
                                         unmerged_tokens=unmerged, mode=bpe_mode or "merges", **split)
        else:
            raise ValueError(
                "BBPETokenizer needs vocab_file and merges_file (from_pretrained passes them), "
                "or an engine tokenizer: BBPETokenizer.from_engine(tok)"
            )
        if add_prefix_space and not adds_prefix_space(core):
            raise ValueError("BBPETokenizer does not support add_prefix_space=True unless its pre_tokenizer is "
                             "ByteLevel(add_prefix_space=True): text is encoded as given")
        if add_bos_token is None or add_eos_token is None:
            saved_bos, saved_eos = bos_eos_from_tokenizer_json(kwargs.get("tokenizer_file"))
            add_bos_token = saved_bos if add_bos_token is None else add_bos_token
            add_eos_token = saved_eos if add_eos_token is None else add_eos_token

        stop_tokens = list(stop_tokens or [])
        if chat_preset is not None:
            preset = resolve_chat_preset(chat_preset)
            if kwargs.get("chat_template") is not None:
                raise ValueError("pass chat_template or chat_preset, not both")
            kwargs["chat_template"] = preset.template
            key = "extra_special_tokens" if isinstance(kwargs.get("extra_special_tokens"), list) \
                else "additional_special_tokens"
            listed = list(kwargs.get(key) or [])
            kwargs[key] = listed + [token for token in preset.special_tokens if token not in map(str, listed)]
            stop_tokens = list(dict.fromkeys([preset.end_of_turn, *stop_tokens]))
        self.stop_tokens = stop_tokens

        self._engine = core
        self._unspelled_ids = tuple(sorted(set(core.special_tokens.values())))
        self._spelling = _Spelling()
        self._max_normal_id = max(self._spelled)
        self._planned_ids: dict[str, int] = {}
        self._matcher: AddedTokenMatcher | None = None
        self._decode_paths = DecodePaths()
        self.add_bos_token = bool(add_bos_token)
        self.add_eos_token = bool(add_eos_token)

        added = initial_added_tokens(
            {**file_specials, **core.special_tokens}, kwargs.get("added_tokens_decoder") or {}, self._spelled,
            core.normalized_special_tokens,
        )
        kwargs["added_tokens_decoder"] = {**added, **reserved_tokens_for_holes(self._spelled, added)}
        super().__init__(clean_up_tokenization_spaces=clean_up_tokenization_spaces, **kwargs)
        self._register_engine_specials()
        self._hold_special_tokens_as_added_tokens()
        for flag, name in ((self.add_bos_token, "bos_token"), (self.add_eos_token, "eos_token")):
            if flag and getattr(self, name) is None:
                raise ValueError(f"add_{name}=True needs a {name}")
        unknown = [token for token in self.stop_tokens if token not in self.get_vocab()]
        if unknown:
            raise ValueError(f"stop token {unknown[0]!r} is not a token of this tokenizer")

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> BBPETokenizer:
        """transformers' ``from_pretrained``; the folder's ``PreTrainedTokenizerFast`` class name
        is expected, so 4.57's warning that it differs from this class is silenced. A local folder
        is put in order first if a save into it was killed (saved_folder.recover_and_check), and
        refused (MixedFolderError, one line) if its tokenizer files disagree."""
        if args:
            recover_and_check(args[0])  # a killed save finished or rolled back; mixed files refused
        with loading_saved_folder(PORTABLE_TOKENIZER_CLASS):
            return super().from_pretrained(*args, **kwargs)

    @classmethod
    def from_engine(cls, tok: Tokenizer, **kwargs: Any) -> BBPETokenizer:
        """Wrap an engine tokenizer (trained, loaded or converted); ``tok`` itself is not changed.

        Its special tokens become special added tokens with the same ids. Named special tokens
        given here (``eos_token="<|endoftext|>"``, ``pad_token="<|pad|>"``...) that the engine
        lacks are added as new special tokens above the largest id in use.
        """
        return cls(engine=tok, **kwargs)

    # ------------------------------------------------------------------ training

    def train_new_from_iterator(
        self,
        text_iterator: Iterable[str | Sequence[str]],
        vocab_size: int,
        length: int | None = None,
        new_special_tokens: Sequence[str | AddedToken] | None = None,
        special_tokens_map: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> BBPETokenizer:
        """A new tokenizer trained on ``text_iterator`` with this one's split pattern (or
        pre-tokenizer), normalizer, special tokens and settings, as transformers'
        ``PreTrainedTokenizerFast.train_new_from_iterator`` does.

        ``text_iterator`` yields texts or batches (lists) of texts. ``vocab_size`` counts the
        special tokens, as in transformers: the new tokenizer has ``vocab_size - k`` normal tokens
        (256 bytes and the merges learned) and then its ``k`` special tokens, in this tokenizer's
        order followed by ``new_special_tokens``; fewer merges if the text has no more pairs.
        ``special_tokens_map`` renames special tokens (``{"<|endoftext|>": "</s>"}``), named roles
        (``eos_token``...) included. Only special added tokens carry over, as in transformers, and
        not the ``<|reserved_special_token_N|>`` ones (they hold unused ids of this vocabulary).
        ``length`` (the number of texts, for transformers' progress bar) is accepted and unused;
        the engine's own keywords ``tie_break``, ``min_frequency``, ``num_workers`` and
        ``show_progress`` (``progress``) are passed to :meth:`Tokenizer.train`.
        """
        train_options = {key: kwargs.pop(key) for key in ("tie_break", "min_frequency", "num_workers") if key in kwargs}
        if "show_progress" in kwargs:
            train_options["progress"] = bool(kwargs.pop("show_progress"))
        if kwargs:
            raise TypeError(f"train_new_from_iterator() got unexpected keyword arguments: {', '.join(kwargs)}")
        rename = dict(special_tokens_map or {})
        specials = [rename.get(token.content, token.content) for _, token in sorted(added_tokens_by_id(self).items())
                    if token.special and not is_reserved_token(token.content)]
        specials += [str(token) for token in new_special_tokens or ()]
        specials = list(dict.fromkeys(specials))
        if vocab_size - len(specials) < 256:
            raise ValueError(f"vocab_size {vocab_size} leaves no room for the 256 byte tokens beside "
                             f"{len(specials)} special tokens (it counts them, as in transformers)")
        old = self._engine
        engine = Tokenizer.from_merges({}, pre_tokenizer=old.pre_tokenizer, normalizer=old.normalizer)
        engine.train(_texts_of(text_iterator), vocab_size - len(specials), **train_options)
        engine.register_special_tokens({token: engine.n_vocab + i for i, token in enumerate(specials)})
        init = {key: value for key, value in self.init_kwargs.items() if key not in _NOT_CARRIED_OVER}
        for key, value in init.items():
            if key.endswith("_token") and isinstance(value, (str, AddedToken)):
                init[key] = _renamed(value, rename)
            elif key in ("additional_special_tokens", "extra_special_tokens") and isinstance(value, (list, tuple)):
                init[key] = [_renamed(token, rename) for token in value]
        stop = [rename.get(token, token) for token in self.stop_tokens]
        init["stop_tokens"] = [token for token in stop if token in specials]
        return type(self).from_engine(engine, **init)

    # ------------------------------------------------------------------ vocabulary

    @property
    def engine(self) -> Tokenizer:
        """The engine tokenizer inside (special tokens included); treat it as read-only. Its
        ``roles`` are this tokenizer's ``bos_token``, ``add_bos_token``... (those that are
        special tokens of the engine)."""
        engine = self._engine
        engine.roles = TokenRoles(
            **{name: _role_token(getattr(self, name, None)) for name in TokenRoles.NAMES},
            add_bos_token=self.add_bos_token, add_eos_token=self.add_eos_token,
        ).kept(engine.special_tokens)
        return engine

    @property
    def pattern(self) -> str:
        """The split regex ("" for none); raises ValueError if the engine splits with a pipeline
        that no single pattern expresses (see ``engine.pre_tokenizer``)."""
        return self._engine.pattern

    @property
    def vocab_size(self) -> int:
        """One more than the largest id of a token that is not an added token."""
        return self._max_normal_id + 1

    def __len__(self) -> int:
        """One more than the largest id in use: the number of embedding rows a model needs.

        Equal to ``len(get_vocab())``: unused ids below the largest one (cl100k's, o200k's, special
        tokens above a gap) hold reserved special tokens (added_tokens.reserved_tokens_for_holes),
        so the fast twin, which counts entries, has the same length. (With more than 65,536 unused
        ids none is filled; such a tokenizer encodes, but ``save_pretrained`` refuses it.)
        """
        top = self._max_normal_id
        added = added_tokens_by_id(self)
        if added:
            top = max(top, max(added))
        if self._planned_ids:
            top = max(top, max(self._planned_ids.values()))
        return top + 1

    def get_vocab(self) -> dict[str, int]:
        vocab = dict(self._token_to_id)
        vocab.update(added_token_ids(self))
        vocab.update(self._planned_ids)
        return vocab

    @contextlib.contextmanager
    def _planning_added_ids(self, new_tokens: Iterable[str | AddedToken]) -> Iterator[dict[str, int]]:
        """While transformers adds ``new_tokens``, ``get_vocab()`` and ``len()`` count them under
        the next ids above every id in use, and transformers takes those ids (see
        transformers_compat.TransformersHooks._add_tokens)."""
        self._planned_ids = ids_above(new_tokens, self.get_vocab(), len(self))
        try:
            yield self._planned_ids
        finally:
            self._planned_ids = {}

    def _as_added_tokens(self, new_tokens: Sequence[str | AddedToken], special: bool) -> Sequence[str | AddedToken]:
        """The tokens transformers should add: under a normalizer, marked ``normalized=False``."""
        if "_engine" in self.__dict__ and self._engine.normalizer is not None:
            return [not_normalized(token, special) for token in new_tokens]
        return new_tokens

    def _added_tokens_changed(self) -> None:
        self._matcher = None
        if "_engine" in self.__dict__:  # not while transformers' __init__ adds the named specials
            self._register_engine_specials()

    def _register_engine_specials(self) -> None:
        """Keep the engine's special tokens equal to the special added tokens (not normal ids)."""
        engine = self._engine
        new = {
            token.content: idx
            for idx, token in added_tokens_by_id(self).items()
            if token.special and idx not in self._spelled and engine.special_tokens.get(token.content) != idx
        }
        if new:
            engine.register_special_tokens(new)

    def _hold_special_tokens_as_added_tokens(self) -> None:
        """Hold named special tokens as their AddedToken, as ``from_pretrained`` leaves them.

        Otherwise a tokenizer built here and the same one loaded back would save different
        special_tokens_map.json files on 4.57 (strings, then dicts).
        """
        by_content = {token.content: token for token in added_tokens_by_id(self).values()}
        for name, value in self.special_tokens_map.items():
            if isinstance(value, str) and value in by_content:
                setattr(self, name, by_content[value])
            elif isinstance(value, list):
                setattr(self, name, [by_content.get(item, item) if isinstance(item, str) else item for item in value])

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

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> str | list[str]:
        """transformers' ``convert_ids_to_tokens``, after checking that every id is an integer
        (transformers would truncate ``65.9`` to ``65``)."""
        if isinstance(ids, (list, tuple)) or (hasattr(ids, "__iter__") and getattr(ids, "ndim", 1) != 0):
            return super().convert_ids_to_tokens(token_id_list(ids), skip_special_tokens=skip_special_tokens)
        return super().convert_ids_to_tokens(single_token_id(ids), skip_special_tokens=skip_special_tokens)

    def convert_tokens_to_string(self, tokens: Iterable[str]) -> str:
        """Join tokens back into text: normal tokens are GPT-2 spellings of bytes, added tokens
        literal. Tokens that are all in the vocabulary are decoded as their ids, by the engine."""
        tokens = tokens if isinstance(tokens, list) else list(tokens)
        ids = list(map(self._token_to_id.get, tokens))
        if None not in ids:
            return self._engine.decode(ids)
        data = bytearray()
        added = self.get_added_vocab()
        for token in tokens:
            if token in self._token_to_id or token not in added:
                data += unicode_to_token(token)
            else:
                data += token.encode("utf-8")
        return data.decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ encoding

    def _added_matcher(self) -> AddedTokenMatcher:
        added = added_tokens_by_id(self)
        matcher = self._matcher
        if matcher is None or matcher.size != len(added):  # the size catches the added_tokens_decoder setter
            matcher = self._matcher = AddedTokenMatcher(added, self._engine.normalizer)
        return matcher

    def tokenize(self, text: str, **kwargs: Any) -> list[str]:
        """Split ``text`` into token strings (GPT-2 spellings; added tokens as written).

        transformers' own version matches added tokens with a trie that differs from the Rust
        ``tokenizers`` library (see added_tokens.py); the text between them goes to :meth:`_tokenize`.
        """
        split_special_tokens = kwargs.pop("split_special_tokens", self.split_special_tokens)
        text, kwargs = self.prepare_for_tokenization(text, **kwargs)
        added = added_tokens_by_id(self)
        tokens: list[str] = []
        for span in self._added_matcher().spans(text, split_special_tokens):
            if span.token_id is None:
                tokens += self._tokenize(text[span.start : span.end] if span.normalized is None else span.normalized)
            else:
                tokens.append(added[span.token_id].content)
        return tokens

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        """The tokens of text that holds no added token (transformers' hook for a subclass)."""
        spelled = self._spelled
        return [spelled[idx] for idx in self._engine.encode_ordinary(text)]

    def _text_ids(self, text: str, split_special_tokens: bool = False) -> list[int]:
        """Ids of ``text``: added tokens by id, the stretches between them by the engine."""
        matcher = self._added_matcher()
        encode = self._engine.encode_ordinary
        if not matcher.may_occur(text, split_special_tokens):  # most texts: no added token in them
            return encode(text)
        ids: list[int] = []
        for span in matcher.spans(text, split_special_tokens):
            if span.token_id is not None:
                ids.append(span.token_id)
            else:  # normalized text (the second pass's) normalizes to itself: normal forms are idempotent
                ids += encode(text[span.start : span.end] if span.normalized is None else span.normalized)
        return ids

    def _text_ids_and_offsets(self, text: str, split_special_tokens: bool = False) -> tuple[list[int], Offsets]:
        """Ids of ``text`` and each token's ``(start, end)`` character offsets in it (an added token
        spans the whitespace it strips, as in ``tokenizers``)."""
        ids: list[int] = []
        offsets: Offsets = []
        for start, end, idx, normalized, alignment in self._added_matcher().spans(text, split_special_tokens):
            if idx is not None:
                ids.append(idx)
                offsets.append((start, end))
            elif normalized is not None:  # the second pass's normalized text: offsets through its alignment
                piece_ids, piece_offsets = self._engine.encode_with_offsets(normalized, allowed_special="none")
                ids += piece_ids
                offsets += [original_span(alignment, first, last) for first, last in piece_offsets]
            else:
                piece_ids, piece_offsets = self._engine.encode_with_offsets(text[start:end], allowed_special="none")
                ids += piece_ids
                offsets += [(first + start, last + start) for first, last in piece_offsets]
        return ids, offsets

    def _request_input(self, text: Any, options: dict[str, Any]) -> Any:
        """An input of an encode request, with a non-empty str as its ids, so that transformers
        skips its per-token path (``""`` stays: transformers refuses an empty id list)."""
        if isinstance(text, str) and text and not options.get("is_split_into_words") \
                and not options.get("sanitize_control_tokens"):
            return self._text_ids(text, options.get("split_special_tokens", self.split_special_tokens))
        return text

    def _request_inputs(self, texts: Sequence[Any], options: dict[str, Any]) -> list[Any]:
        """``_request_input`` of each text of a batch; the texts that hold no added token are
        encoded together by the engine's batch path (one C call per range of texts, on threads
        without the GIL), which is what ``tokenizer(texts)`` and ``datasets.map(batched=True)`` run."""
        if options.get("is_split_into_words") or options.get("sanitize_control_tokens"):
            return list(texts)
        split = options.get("split_special_tokens", self.split_special_tokens)
        matcher = self._added_matcher()
        plain = [i for i, text in enumerate(texts) if type(text) is str and text and not matcher.may_occur(text, split)]
        requests = [self._request_input(text, options) if isinstance(text, str) else text for text in texts] \
            if len(plain) < len(texts) else list(texts)
        if plain:
            batch = self._engine.encode_batch([texts[i] for i in plain], allowed_special="none", disallowed_special=())
            for i, ids in zip(plain, batch):
                requests[i] = ids
        return requests

    def _plain_output(self, ids: list[int], options: Mapping[str, Any]) -> BatchEncoding | None:
        return plain_output(self, ids, options)

    def _offset_mapping_output(self, encode: Any, request: tuple[Any, Any], options: dict[str, Any]) -> BatchEncoding:
        return with_offset_mapping(self, encode, request, options)

    def apply_chat_template(self, conversation: Any, *args: Any, **kwargs: Any) -> Any:
        """transformers' ``apply_chat_template``. With ``return_assistant_tokens_mask=True``,
        transformers reads each token's characters from a fast tokenizer's encodings
        (``char_to_token`` on 4.57, ``encodings[i].offsets`` on 5.x), which a Python tokenizer
        lacks; here its encode call returns the offsets in that form, so the mask is the one the
        fast twin gives (tested), as TRL's ``assistant_only_loss`` needs."""
        if not kwargs.get("return_assistant_tokens_mask"):
            return super().apply_chat_template(conversation, *args, **kwargs)
        with token_spans_for_masks():
            result = super().apply_chat_template(conversation, *args, **kwargs)
        if isinstance(result, BatchEncoding):
            drop_token_spans(result)
        return result

    def __call__(self, text: Any = None, *args: Any, **kwargs: Any) -> BatchEncoding:
        """transformers' ``__call__``; ``tokenizer(text)`` with one str and only the options in
        ``_DIRECT_CALL`` skips its generic argument handling, which costs more than encoding a
        short text (the result is the same; tests compare the two paths). A batch of non-empty
        str with those options goes the same way, its texts encoded together (``_request_inputs``).
        Inside ``apply_chat_template(..., return_assistant_tokens_mask=True)`` the result also
        carries each token's offsets where transformers reads a fast tokenizer's."""
        if token_spans_wanted():
            keep = bool(kwargs.get("return_offsets_mapping"))
            encoding = super().__call__(text, *args, **{**kwargs, "return_offsets_mapping": True})
            return with_token_spans(encoding, keep_offset_mapping=keep)
        if not args and _DIRECT_CALL.issuperset(kwargs) and not in_target_context(self):
            if type(text) is str and text:
                split = kwargs.get("split_special_tokens", self.split_special_tokens)
                encoding = plain_output(self, self._text_ids(text, split), kwargs)
                if encoding is not None:
                    return encoding
            elif type(text) in (list, tuple) and text and all(type(item) is str and item for item in text):
                with collector_paused():
                    encoding = plain_batch_output(self, self._request_inputs(text, kwargs), kwargs)
                if encoding is not None:
                    return encoding
        return super().__call__(text, *args, **kwargs)

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

    def decode(self, token_ids: Any, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool | None = None, **kwargs: Any) -> str | list[str]:
        """transformers' ``decode``: the text of one sequence of ids (a list, tuple, numpy array,
        torch tensor, ``array``, one int), or on 5.x of each sequence of a batch. A sequence or a
        batch goes to the engine's decoder as it is (numpy arrays and tensors without a Python
        int per id); ``skip_special_tokens`` and ``clean_up_tokenization_spaces`` as the fast
        class takes them (see :meth:`_decode`)."""
        if one_sequence(token_ids):
            return self._decode(token_ids, skip_special_tokens, clean_up_tokenization_spaces, **kwargs)
        if DECODE_TAKES_BATCHES:
            batch = sequence_batch(token_ids)
            if batch:
                return self._decode_batch(batch, skip_special_tokens, clean_up_tokenization_spaces)
        return super().decode(token_ids, skip_special_tokens=skip_special_tokens,
                              clean_up_tokenization_spaces=clean_up_tokenization_spaces, **kwargs)

    def batch_decode(self, sequences: Any, skip_special_tokens: bool = False,
                     clean_up_tokenization_spaces: bool | None = None, **kwargs: Any) -> list[str]:
        """transformers' ``batch_decode``: the text of each sequence, decoded by the engine in one
        call (a list of sequences or a 2-d array or tensor; anything else as transformers takes it)."""
        batch = sequence_batch(sequences)
        if batch is None:
            return super().batch_decode(sequences, skip_special_tokens=skip_special_tokens,
                                        clean_up_tokenization_spaces=clean_up_tokenization_spaces, **kwargs)
        return self._decode_batch(batch, skip_special_tokens, clean_up_tokenization_spaces)

    def _decode(
        self,
        token_ids: Any,
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        **kwargs: Any,
    ) -> str:
        """Bytes of the ids, decoded as UTF-8 (invalid bytes become U+FFFD), by the engine's decoder
        (added tokens included, decode_outputs.py).

        ``skip_special_tokens`` leaves out the named special tokens and every added token marked
        special (as the Rust tokenizer does). ``clean_up_tokenization_spaces`` (None: the
        tokenizer's setting) is applied as this transformers version's fast class applies it to a
        BPE model (transformers_compat.cleans_up: 4.57 cleans up, 5.x does not unless told to).
        An unknown id raises ValueError naming it and its position; a non-integer id raises
        :class:`~token_ids.TokenIdTypeError` naming it. transformers 4.57's
        ``spaces_between_special_tokens`` is ignored: the text is exact.
        """
        skip = self._skip_ids() if skip_special_tokens else None
        text = self._decoder().decode(token_ids, skip_ids=skip)
        return self.clean_up_tokenization(text) if cleans_up(self, clean_up_tokenization_spaces) else text

    def _decode_batch(self, batch: list[Any], skip_special_tokens: bool,
                      clean_up_tokenization_spaces: bool | None) -> list[str]:
        """:meth:`_decode` of each sequence, in one call of the engine's batch decoder."""
        skip = self._skip_ids() if skip_special_tokens else None
        texts = self._decoder().decode_batch(batch, num_threads=_decode_threads(batch), skip_ids=skip)
        if cleans_up(self, clean_up_tokenization_spaces):
            return [self.clean_up_tokenization(text) for text in texts]
        return texts

    def decode_stream(self, skip_special_tokens: bool = False, prefill: Iterable[int] | None = None) -> Any:
        """A stream that decodes ids as a model generates them, like ``tokenizers``' ``DecodeStream``
        (the engine's ``Tokenizer.decode_stream``, added tokens included): ``stream.step(id)`` (or
        several ids) returns the new text as soon as it is whole UTF-8, or None; ``prefill``: the
        prompt's ids, whose text is not returned; ``stream.flush()`` returns the bytes still
        waiting at the end (U+FFFD for a cut character), or None. The steps' texts and the flush,
        joined, are ``decode(ids, skip_special_tokens=...)`` without the clean-up."""
        skip = self._skip_ids() if skip_special_tokens else None
        return self._decoder().decode_stream(prefill=prefill, skip_ids=skip)

    def _decoder(self) -> Any:
        """The engine, or a decoder over the engine's tokens and the added tokens it lacks."""
        return self._decode_paths.decoder(self._engine, added_tokens_by_id(self), lambda: self._spelled, self.__len__)

    def _skip_ids(self) -> frozenset[int]:
        return self._decode_paths.skip_ids(self.all_special_ids, added_tokens_by_id(self))

    # ------------------------------------------------------------------ saving

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        """Write ``vocab.json``, ``merges.txt`` and ``tokenizer.json`` (the fast twin)."""
        prefix = f"{filename_prefix}-" if filename_prefix else ""
        directory = Path(save_directory)
        vocab_file = directory / (prefix + VOCAB_FILES_NAMES["vocab_file"])
        merges_file = directory / (prefix + VOCAB_FILES_NAMES["merges_file"])
        json_file = directory / (prefix + TOKENIZER_JSON)
        write_vocab_merges(vocab_file, merges_file, self._spelled, self._engine.merges)
        write_text_atomic(json_file, _json_text(self.tokenizer_json()))
        return (str(vocab_file), str(merges_file), str(json_file))

    def tokenizer_json(self) -> dict[str, Any]:
        """The ``tokenizer.json`` content for this tokenizer, added tokens and bos/eos included."""
        return fast_twin_json(self)

    def _check_savable(self) -> None:
        """A saved folder has no unused id below the largest one (``__init__`` filled them with
        reserved special tokens, unless there were more than ``MAX_RESERVED_FILL``)."""
        refuse_id_holes(self._spelled, added_tokens_by_id(self))

    def _finish_folder(self, folder: Path, prefix: str, remote_code: bool) -> tuple[str, ...]:
        """After transformers' save: ``tokenizer_config.json`` rewritten to load on 4.57 and 5.x
        alike, ``generation_config.json`` and, if asked, the remote code (see saved_folder.py)."""
        finish_saved_folder(folder, self, prefix, (self.add_bos_token, self.add_eos_token), remote_code)
        return ()

    # ------------------------------------------------------------------ pickling

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_matcher"] = None  # compiled regexes: rebuilt on first use
        return state

    @property
    def _spelled(self) -> dict[int, str]:
        """``{id: spelled token}`` of the engine's normal tokens, made from its vocabulary."""
        return self._spelling.tables(self)[0]

    @property
    def _token_to_id(self) -> dict[str, int]:
        return self._spelling.tables(self)[1]


class BBPETokenizerFast(PortableFolder, PreTrainedTokenizerFast):
    """transformers' fast tokenizer over a saved folder's ``tokenizer.json``: the class that the
    folder's ``auto_map`` names for a fast tokenizer, so that ``AutoTokenizer.from_pretrained(folder,
    trust_remote_code=True)``, which vLLM, SGLang and xgrammar make, gives a fast tokenizer (ids,
    offsets and length equal to BBPETokenizer's; tests compare them).

    It adds nothing to encoding; it keeps the folder whole when it is saved again (a fine-tuning
    run saves the tokenizer it was given beside the checkpoint): ``vocab.json`` and ``merges.txt``
    come along, ``tokenizer_config.json`` stays portable (see saved_folder.py) and the remote code
    is copied, so the saved folder loads on every path as the original does.
    """

    vocab_files_names = {**VOCAB_FILES_NAMES, "tokenizer_file": TOKENIZER_JSON}
    model_input_names = ["input_ids", "attention_mask"]

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> BBPETokenizerFast:
        """transformers' ``from_pretrained``, without 4.57's warning that the folder's class name differs;
        a local folder is checked first as :meth:`BBPETokenizer.from_pretrained` checks it."""
        if args:
            recover_and_check(args[0])
        with loading_saved_folder(PORTABLE_TOKENIZER_CLASS):
            return super().from_pretrained(*args, **kwargs)

    @property
    def can_save_slow_tokenizer(self) -> bool:
        """False: 4.57 would write ``added_tokens.json``; ``save_pretrained`` copies the slow files itself."""
        return False

    def _finish_folder(self, folder: Path, prefix: str, remote_code: bool) -> tuple[str, ...]:
        """After transformers' save: ``vocab.json`` + ``merges.txt`` copied from the folder this
        was loaded from, ``tokenizer_config.json`` made portable, ``generation_config.json`` and,
        if asked, the remote code."""
        copied = copy_slow_files(folder, prefix, self.init_kwargs)
        finish_saved_folder(folder, self, prefix, bos_eos_from_tokenizer_json(folder / (prefix + TOKENIZER_JSON)),
                            remote_code)
        return tuple(copied)


class _Spelling:
    """The spelled vocabulary of a BBPETokenizer and its inverse, made on first use and never
    pickled (remade from the engine): pickling a tokenizer stays cheap, and so does ``datasets``'
    fingerprint of a ``map`` function that holds one (it pickles the tokenizer's ``__dict__``)."""

    __slots__ = ("spelled", "token_to_id")

    def __init__(self) -> None:
        self.spelled: dict[int, str] | None = None
        self.token_to_id: dict[str, int] | None = None

    def __reduce__(self) -> tuple[type, tuple]:
        return _Spelling, ()

    def tables(self, tok: BBPETokenizer) -> tuple[dict[int, str], dict[str, int]]:
        if self.spelled is None:
            spelled = spell_vocab(tok._engine.vocab, skip=set(tok._unspelled_ids))
            self.token_to_id = {text: idx for idx, text in spelled.items()}
            self.spelled = spelled
        return self.spelled, self.token_to_id


_NOT_CARRIED_OVER = frozenset({
    "vocab_file", "merges_file", "tokenizer_file", "name_or_path", "is_local", "local_files_only", "backend",
    "added_tokens_decoder", "auto_map", "engine", "pattern", "pre_tokenizer", "normalizer", "bpe_mode",
})
"""init_kwargs that describe the old files or the old engine, not settings for a new tokenizer."""


def _texts_of(text_iterator: Iterable[str | Sequence[str]]) -> Iterator[str]:
    """The texts of an iterator of texts or of batches of texts."""
    for item in text_iterator:
        if isinstance(item, str):
            yield item
        elif isinstance(item, (list, tuple)):
            for text in item:
                if not isinstance(text, str):
                    raise TypeError(f"train_new_from_iterator: a batch holds a {type(text).__name__}, not a str")
                yield text
        else:
            raise TypeError(f"train_new_from_iterator: expected texts or lists of texts, got a {type(item).__name__}")


def _renamed(token: str | AddedToken, rename: Mapping[str, str]) -> str | AddedToken:
    """``token`` under its new name in ``rename`` (an AddedToken keeps its flags)."""
    content = str(token)
    if content not in rename:
        return token
    if isinstance(token, AddedToken):
        return AddedToken(rename[content], single_word=token.single_word, lstrip=token.lstrip, rstrip=token.rstrip,
                          normalized=token.normalized, special=True)
    return rename[content]


def _decode_threads(batch: list[Any]) -> int:
    """Threads for a batch decode: one for a small batch (a thread costs more than it saves
    there), else every CPU available, as the engine's ``encode_batch`` takes them."""
    return 1 if len(batch) < 64 else available_cpus()


def _role_token(token: str | AddedToken | None) -> str | None:
    return None if token is None else str(token)


def _json_text(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"



def _pattern_or_gpt2(pattern: str | None) -> str | None:
    """GPT-2's split pattern unless one is given; ``""`` means no split."""
    if pattern is None:
        return resolve_pattern("gpt2")
    return resolve_pattern(pattern) if pattern else None


def _copy_engine(engine: Tokenizer, pattern: str | None, pre_tokenizer: Any, normalizer: Any,
                 mode: str | None) -> Tokenizer:
    if pattern is not None and resolve_pattern(pattern or None) != (engine.pattern or None):
        raise ValueError(f"pattern {pattern!r} differs from the engine's split pattern {engine.pattern!r}")
    if mode is not None and mode != engine.mode:
        raise ValueError(f"bpe_mode {mode!r} differs from the engine's mode {engine.mode!r}")
    copy = Tokenizer.from_merges(engine.merges, special_tokens=engine.special_tokens, byte_ids=engine.byte_ids,
                                 check=False, unmerged_tokens=engine.unmerged_tokens, mode=engine.mode,
                                 pre_tokenizer=engine.pre_tokenizer, normalizer=engine.normalizer,
                                 allow_large_ids=True)  # the engine checked its special ids when they were registered
    copy.normalized_special_tokens = engine.normalized_special_tokens
    for name, given, resolve in (("pre_tokenizer", pre_tokenizer, resolve_pre_tokenizer),
                                 ("normalizer", normalizer, resolve_normalizer)):
        if given is not None and resolve(given) != getattr(copy, name):
            raise ValueError(f"{name} {given!r} differs from the engine's {getattr(copy, name)!r}")
    return copy

