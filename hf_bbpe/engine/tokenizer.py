"""minbpe's tokenizer classes, with tiktoken's encode API on top.

A tokenizer is fully described by: how text is cut into chunks (an optional ``normalizer``, then
the split ``pattern`` or a ``pre_tokenizer`` pipeline), the ordered ``merges``
``{(left_id, right_id): new_id}``, the ids of the 256 single bytes (``byte_ids``, the identity
unless imported from GPT-2 or cl100k), the ``unmerged_tokens`` that no merge builds (none
unless imported), the ``mode`` that says how chunks are encoded, and ``special_tokens``, with
the ``roles`` some of them play for transformers (BOS, EOS, pad; never added by ``encode``).
Everything else (``vocab``, the chunk encoder, the special-token regex) is derived and rebuilt
when those change. The tokens and what encodes with them are :class:`~bpe_model.BPEModel`
(engine/encoding/bpe_model.py), which ``Tokenizer`` extends with its chunking
(engine/chunking/chunking.py), training (engine/training/api.py) and files; the hot calls
(``encode_ordinary``, ``encode``) stay here, one C call each.

Modes (see engine/encoding/encoder.py): ``"merges"`` applies the merges (minbpe, GPT-2); ``"ignore_merges"``
first looks a whole chunk up in the vocabulary (``tokenizers``' ``ignore_merges: true``);
``"ranks"`` is tiktoken's algorithm: the whole-chunk lookup, then any two adjacent parts whose
bytes form a token merge, lowest id first. In ``"ranks"`` mode the vocabulary is what counts and
the merges are the ones the ranks imply, recovered when first asked for.
"""

from __future__ import annotations

import os
from array import array
from typing import Any
from collections.abc import Iterable, Mapping, Sequence

from .chunking.chunking import Chunking
from .chunking.normalizers import Normalizer
from .chunking.pre_tokenizers import PreTokenizer
from .encoding.batches import encode_batch, encode_batch_threads, encode_batch_to_numpy, encode_to_numpy
from .encoding.bpe_model import BPEModel
from .encoding.encoder import DuplicateTokensError, TokenTable, encode_split_text
from .encoding.offsets import encoded_offsets
from .encoding.special_tokens import AllowedSpecial, DisallowedSpecial, DisallowedSpecialToken, checked_special_tokens
from .encoding.vocabulary import (
    check_table_ids,
    checked_byte_ids,
    checked_merges,
    checked_mode,
    checked_model_contents,
    checked_unmerged,
    merges_from_array,
    merges_to_array,
    normal_ids,
    rank_vocabulary,
)
from .files.minbpe_model import ModelFileError, model_file_path, read_model_file, repair_vocab_listing, save_tokenizer
from .training.api import (
    ChunkCounts,
    count_tokenizer_chunks,
    extend_tokenizer,
    train_tokenizer,
    train_tokenizer_by_language,
    train_tokenizer_from_counts,
)
from .training.options import TrainingOptions
from .training.parity import ParityConfig
from .training.superwords import SuperwordConfig


class Tokenizer(BPEModel):
    """Byte-level BPE: train, encode, decode, save and load.

    ``pattern`` is a registered name ("gpt2", "gpt4", "o200k") or a regex; ``""`` or ``None``
    means no split (the whole text is one sequence, minbpe's BasicTokenizer). The chunks are the
    pattern's matches, as in tiktoken and minbpe. ``pre_tokenizer`` instead of ``pattern``: a
    pipeline of steps as ``tokenizers`` runs them (pre_tokenizers.py; an object or its JSON form). ``normalizer``: ``"NFC"``, ``"NFKC"``, ``"NFD"``, ``"NFKD"``, several joined
    by ``+``, or a normalizers.py object; text is normalized before it is split, as in
    ``tokenizers`` (each stretch between special tokens on its own).
    """

    def __init__(
        self,
        pattern: str | None = None,
        *,
        pre_tokenizer: PreTokenizer | Mapping | None = None,
        normalizer: Normalizer | str | Mapping | None = None,
    ) -> None:
        self.chunking = Chunking.from_options(pattern, pre_tokenizer, normalizer)
        self._set_tokens("merges", list(range(256)), {}, {}, {}, normalized_specials=frozenset())

    # ----------------------------------------------------------------- state

    @classmethod
    def from_merges(
        cls,
        merges: Mapping[tuple[int, int], int],
        *,
        pattern: str | None = None,
        special_tokens: Mapping[str, int] | None = None,
        byte_ids: Sequence[int] | None = None,
        check: bool = True,
        pre_tokenizer: PreTokenizer | Mapping | None = None,
        normalizer: Normalizer | str | Mapping | None = None,
        unmerged_tokens: Mapping[int, bytes] | None = None,
        mode: str = "merges",
        allow_large_ids: bool = False,
    ) -> Tokenizer:
        """Build a tokenizer from merges in order (for importers and converters).

        ``byte_ids[b]`` is the id of byte ``b`` (default: ``b``), -1 for a byte without a token
        (a file may lack the bytes UTF-8 never uses; text whose encoding needs such a byte on its
        own raises :class:`~chunk_encoder.MissingByteError`). ``unmerged_tokens`` are
        normal tokens ``{id: bytes}`` that no merge builds; merges may name them. Raises
        ValueError if a merge names an id that is neither a byte, an unmerged token nor an
        earlier merge, or if ids collide. ``check=False`` skips those merge checks, for merges
        valid by construction (recovered from ranks); the merges must then be a dict of int
        pairs to ints in increasing order. ``mode``: see the module doc. Special tokens are
        checked as :meth:`register_special_tokens` checks them. ``pre_tokenizer`` and
        ``normalizer`` as in the constructor.

        ``Tokenizer.from_merges`` gives a RegexTokenizer, or a BasicTokenizer when there is no
        pattern or pipeline; called on a subclass, it gives that class.
        """
        tok = cls._blank(pattern, pre_tokenizer, normalizer)
        byte_ids = checked_byte_ids(byte_ids)
        mode = checked_mode(mode)
        unmerged = checked_unmerged(unmerged_tokens or {}, byte_ids)
        merges = checked_merges(merges, byte_ids, unmerged) if check else dict(merges)
        specials = checked_special_tokens(special_tokens or {}, existing={}, allow_large_ids=allow_large_ids,
                                          normal_ids=normal_ids(byte_ids, unmerged, merges))
        tok._set_tokens(mode, byte_ids, merges, unmerged, specials)  # once: tables for 100k+ merges take a while
        return tok

    # --------------------------------------------------------- chunking text

    @property
    def chunking(self) -> Chunking:
        """How ordinary text becomes chunks (normalizer, pre-tokenizer, C scanner): the one
        object every caller asks (see engine/chunking/chunking.py). Assign a new one to change it."""
        return self._chunker

    @chunking.setter
    def chunking(self, chunking: Chunking) -> None:
        self._chunker = chunking
        self._set_hot_path()

    def _set_hot_path(self) -> None:
        self._scanner = self._chunker.scanner  # encode_ordinary's one attribute lookup for it

    def __getstate__(self) -> dict:
        """A compact state: what is rebuilt on unpickling (the C scanner, which is per process;
        the encoder and the caches, made from the merges or ranks) is left out, and the merges are
        one array. Pickling stays cheap, and so does ``datasets``' fingerprint of a ``map``
        function that holds a tokenizer (it pickles it)."""
        state = self.__dict__.copy()
        for key in ("_scanner", "_encoder", "_vocab", "_rank_vocab", "_specials", "_plain_array", "_decoder"):
            state.pop(key, None)
        if type(state.get("_merges")) is dict:
            state["_merges"] = merges_to_array(state["_merges"])
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state.get("_merges"), array):
            state = {**state, "_merges": merges_from_array(state["_merges"])}
        self.__dict__.update(state)
        if "_rank_table" in state:
            self._rank_vocab = None
        if "_encoder" not in state:
            self._rebuild()
        self._set_hot_path()

    @property
    def pattern(self) -> str:
        """The split regex (``""`` for none). A ``pre_tokenizer`` that is not one regex split has
        none: reading it then raises ValueError (use :attr:`pre_tokenizer`). Assigning a pattern
        replaces the pre-tokenizer.

        An imported ``Split(pattern, "isolated")`` (Llama 3, Qwen2) reports its pattern here, but
        keeps as chunks any text the pattern skips, where a tokenizer made with ``pattern=`` drops
        it; the two agree on patterns that match every character, as these do.
        """
        plain = self._chunker.split_pattern
        if plain is None:
            raise ValueError(f"this tokenizer pre-tokenizes with a pipeline, {self._chunker.pre_tokenizer!r}, which "
                             "no single split pattern expresses; use .pre_tokenizer")
        return plain

    @pattern.setter
    def pattern(self, pattern: str | None) -> None:
        self.chunking = Chunking.from_options(pattern, None, self._chunker.normalizer)

    @property
    def pre_tokenizer(self) -> PreTokenizer | None:
        """The pre-tokenizer pipeline (a ``Split`` for a plain pattern; None: no split)."""
        return self._chunker.pre_tokenizer

    @pre_tokenizer.setter
    def pre_tokenizer(self, pre_tokenizer: PreTokenizer | Mapping | str | None) -> None:
        if isinstance(pre_tokenizer, str):
            self.chunking = Chunking.from_options(pre_tokenizer, None, self._chunker.normalizer)
        else:
            self.chunking = Chunking.from_options(None, pre_tokenizer, self._chunker.normalizer)

    @property
    def normalizer(self) -> Normalizer | None:
        """The normalizer applied before splitting (None: text is encoded as given)."""
        return self._chunker.normalizer

    @normalizer.setter
    def normalizer(self, normalizer: Normalizer | str | Mapping | None) -> None:
        self.chunking = Chunking.from_options(None, self._chunker.pre_tokenizer, normalizer)

    @property
    def plain_pattern(self) -> str | None:
        """The pattern when the pre-tokenizer is exactly what ``pattern=`` makes (its matches are
        the chunks), else None: what tiktoken, minbpe and a ``.model`` v1 file can hold."""
        return self._chunker.plain_pattern

    @property
    def is_plain(self) -> bool:
        """True if text is cut by one split pattern (or not at all) with no normalizer: what
        tiktoken and minbpe's formats can hold."""
        return self._chunker.is_plain

    def chunks(self, text: str) -> list[str] | list[bytes]:
        """The chunks that ordinary ``text`` is encoded in (normalized, then pre-tokenized);
        bytes chunks when the pipeline splits after its ``ByteLevel`` step."""
        return self._chunker(text)

    def chunks_with_spans(self, text: str) -> list[tuple[str | bytes, list[tuple[int, int]]]]:
        """:meth:`chunks` with, per chunk character (per byte for bytes chunks), the span of
        ``text`` it comes from, aligned as ``tokenizers`` aligns offsets (for offset mapping)."""
        return self._chunker.with_spans(text)

    @classmethod
    def _blank(cls, pattern: str | None, pre_tokenizer: PreTokenizer | Mapping | None = None,
               normalizer: Normalizer | str | Mapping | None = None) -> Tokenizer:
        """An empty tokenizer of this class (Regex or Basic by ``pattern`` and ``pre_tokenizer``
        for the base class)."""
        options = {key: value for key, value in (("pre_tokenizer", pre_tokenizer), ("normalizer", normalizer))
                   if value is not None}
        split = bool(pattern) or pre_tokenizer is not None
        if cls is Tokenizer:
            return RegexTokenizer(pattern, **options) if split else BasicTokenizer(**options)
        if issubclass(cls, BasicTokenizer):
            if split:
                raise ValueError(f"{cls.__name__} has no split pattern, got {pattern or pre_tokenizer!r}")
            return cls(**options)
        return cls(pattern or None, **options)

    @classmethod
    def from_ranks(
        cls,
        mergeable_ranks: Mapping[bytes, int],
        *,
        pattern: str | None = None,
        special_tokens: Mapping[str, int] | None = None,
        pre_tokenizer: PreTokenizer | Mapping | None = None,
        normalizer: Normalizer | str | Mapping | None = None,
    ) -> Tokenizer:
        """A ``"ranks"``-mode tokenizer: tiktoken's ``Encoding`` for the same arguments.

        ``mergeable_ranks`` maps every normal token's bytes to its id, as tiktoken's
        ``Encoding(mergeable_ranks=...)`` takes it. The merges are recovered from the ranks when first
        needed (:attr:`merges`); tokens that no merge of lower ranks builds are kept as
        :attr:`unmerged_tokens`. Raises ValueError for a negative id or two tokens with one id.

        A single byte without a rank loads, as tiktoken loads it: text whose encoding needs that
        byte on its own raises :class:`~chunk_encoder.MissingByteError` naming it (tiktoken
        panics there), everything else encodes as tiktoken encodes it. Such a vocabulary has no
        merge list (:attr:`merges` raises), so it cannot be saved or extended.
        """
        table, byte_ids = rank_vocabulary(mergeable_ranks)
        return cls.from_token_table(table, byte_ids, pattern=pattern, special_tokens=special_tokens,
                                    pre_tokenizer=pre_tokenizer, normalizer=normalizer)

    @classmethod
    def from_token_table(
        cls,
        table: TokenTable,
        byte_ids: Sequence[int],
        *,
        pattern: str | None,
        special_tokens: Mapping[str, int] | None,
        pre_tokenizer: PreTokenizer | Mapping | None = None,
        normalizer: Normalizer | str | Mapping | None = None,
    ) -> Tokenizer:
        """:meth:`from_ranks` for a vocabulary given as a table with distinct ids (importers
        read files straight into one); ``byte_ids[b]`` is the id of byte ``b``, -1 if none."""
        check_table_ids(table)
        tok = cls._blank(pattern, pre_tokenizer, normalizer)
        specials = checked_special_tokens(special_tokens or {}, existing={}, normal_ids=set(table.ids))
        tok._set_tokens("ranks", [int(i) for i in byte_ids], None, {}, specials, rank_table=table)
        duplicate = tok._encoder.first_duplicate()
        if duplicate is not None:
            raise DuplicateTokensError(tok._normal_vocab()[duplicate[0]], *duplicate)
        return tok

    # -------------------------------------------------------------- training
    # (the work is in engine/training/api.py; these methods are the public API)

    def train(
        self,
        text: str | Iterable[str] | os.PathLike | Sequence[os.PathLike] | None = None,
        vocab_size: int | None = None,
        verbose: bool = False,
        *,
        files: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
        tie_break: str = "smallest_pair",
        min_frequency: int = 1,
        num_workers: int | None = None,
        progress: bool | None = None,
        text_column: str = "text",
        docs: str = "line",
        max_memory: int | str | None = None,
        superwords: SuperwordConfig | bool | None = None,
        languages: Mapping[str, Any] | None = None,
        parity: ParityConfig | None = None,
    ) -> None:
        """Learn ``vocab_size - 256`` merges from a str, an iterable of documents, or files.

        Or, parity-aware: ``languages={name: corpus}`` (each corpus any input above) with
        ``parity=ParityConfig(dev=... or ratio=...)`` instead of ``text`` (see parity_reference.py).

        ``files=`` is a path or a list (text files, ``.jsonl``, ``.parquet``, as ``tokenizers``'
        ``train(files=...)`` takes them); ``pathlib.Path`` objects given as ``text`` are files
        too, a str never is. A ``datasets`` dataset or a ``ray.data.Dataset`` is read by column.
        The keywords are documented once, in :class:`~hf_bbpe.engine.training.options.TrainingOptions`.
        Special tokens already registered keep their ids; merges skip them.
        """
        options = TrainingOptions.from_arguments(locals())
        if languages is None and parity is None:
            train_tokenizer(self, text, files, vocab_size, options)
        elif languages is None or text is not None or files is not None:
            raise TypeError("parity training takes languages={name: corpus} and parity=ParityConfig(...), "
                            "without text or files=")
        else:
            train_tokenizer_by_language(self, languages, vocab_size, options)

    def train_from_counts(
        self,
        counts: Mapping[str | bytes, int] | ChunkCounts | str | os.PathLike,
        vocab_size: int,
        verbose: bool = False,
        *,
        tie_break: str = "smallest_pair",
        min_frequency: int = 1,
        progress: bool | None = None,
    ) -> None:
        """Learn merges from precomputed chunk counts ``{chunk: count}``.

        Count the chunks with any engine (e.g. a map-reduce over ``pattern``), then call this.
        ``counts`` may also be the C kernel's :class:`~counting.ChunkCounts`, or the path of a
        counts file (written by :meth:`count_chunks` with ``out=``), which is mapped, not read,
        and must have been counted with this tokenizer's split pattern. The keywords: see
        :class:`~hf_bbpe.engine.training.options.TrainingOptions`, and :meth:`train`.
        """
        train_tokenizer_from_counts(self, counts, vocab_size, TrainingOptions.from_arguments(locals()))

    def count_chunks(
        self,
        text: str | Iterable[str] | os.PathLike | Sequence[os.PathLike] | None = None,
        *,
        files: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
        docs: str = "line",
        text_column: str = "text",
        num_workers: int | None = None,
        progress: bool | None = None,
        max_memory: int | str | None = None,
        out: str | os.PathLike | None = None,
    ) -> ChunkCounts:
        """The chunk counts that :meth:`train` would learn from (same inputs), as
        :class:`~counting.ChunkCounts`, in order of first appearance; with ``out``, also written to
        that counts file (atomically; see counts_file.py), which ``train_from_counts(out,
        vocab_size)`` trains from at any vocab size without counting again.
        """
        return count_tokenizer_chunks(self, text, files, TrainingOptions.from_arguments(locals()), out)

    # The keywords repeat train's on purpose: extending is training that continues from these merges.
    def extend(
        self,
        text: str | Iterable[str] | os.PathLike | Sequence[os.PathLike] | None = None,
        num_new_merges: int | None = None,
        verbose: bool = False,
        *,
        files: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
        tie_break: str = "smallest_pair",
        min_frequency: int = 1,
        num_workers: int | None = None,
        progress: bool | None = None,
        text_column: str = "text",
        docs: str = "line",
        max_memory: int | str | None = None,
        superwords: SuperwordConfig | bool | None = None,
    ) -> Tokenizer:
        """A new tokenizer with up to ``num_new_merges`` merges learned on top of this one's.

        The new corpus (as :meth:`train` takes it) is counted with this tokenizer's chunking and
        each chunk is segmented with the existing merges; BPE then continues on those sequences.
        Every old id keeps its bytes, every old merge is kept in order, special tokens keep their
        ids, new ids start above the highest normal id and skip ids that are taken, and no new
        token repeats the bytes of an existing one, so text in which no new merge applies
        encodes exactly as before. The mode is kept (in ``"ranks"`` mode the new tokens join the
        vocabulary). The keywords, ``superwords`` too: see :meth:`train`.
        """
        return extend_tokenizer(self, text, files, num_new_merges, TrainingOptions.from_arguments(locals()))

    # -------------------------------------------------------------- encoding

    def encode_ordinary(self, text: str, *, num_threads: int = 1) -> list[int]:
        """Encode ``text`` with no special-token handling.

        ``num_threads`` > 1 encodes a long text (512 KB of UTF-8 or more, with a pattern the C
        scanner knows) on that many threads, with the same ids. The default is one thread, as in
        tiktoken: a call stays on the core it was given, so that callers who already run one
        encode per worker (DataLoader workers, process pools, ``encode_batch``) do not oversubscribe.
        """
        scanner = self._scanner
        if scanner is not None:  # the common call, one per document: one C call, no other frame
            ids = self._encoder.encode_text(text, scanner, num_threads)
            if ids is not None:
                return ids
        return encode_split_text(self._encoder, self._chunker, text, num_threads)

    def encode(
        self,
        text: str,
        allowed_special: AllowedSpecial = "none_raise",
        disallowed_special: DisallowedSpecial = "all",
        *,
        num_threads: int = 1,
    ) -> list[int]:
        """Encode ``text``; special tokens follow tiktoken's rules (see special_tokens.py).
        ``num_threads``: as in :meth:`encode_ordinary` (one thread unless asked).

        By default text that spells a special token raises :class:`DisallowedSpecialToken` (a
        ValueError whose ``.token`` names it); pass
        ``allowed_special="all"`` to encode it as the special id, or ``disallowed_special=()``
        to encode it as ordinary text.
        """
        specials = self._specials
        allowed, disallowed = specials.policy(allowed_special, disallowed_special)
        if specials.normalized and not specials.normalized.isdisjoint(allowed | disallowed):
            return specials.encode_normalized(text, allowed, disallowed, self.normalizer, self.encode_ordinary)
        if disallowed:
            match = specials.regex(disallowed).search(text)
            if match:
                raise DisallowedSpecialToken(match.group())
        if not allowed:
            return self.encode_ordinary(text, num_threads=num_threads)
        return specials.encode_allowed(text, allowed, self.encode_ordinary, num_threads)

    def encode_with_offsets(
        self,
        text: str,
        allowed_special: AllowedSpecial = "none_raise",
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """``encode(text, ...)`` and each token's ``(start, end)`` character offsets in ``text``.

        A token holding part of a multi-byte character spans that whole character, as the
        ``tokenizers`` library reports it (see engine/encoding/offsets.py). Under a normalizer or a
        pipeline that changes the text (``ByteLevel(add_prefix_space=True)``), offsets go
        through :meth:`chunks_with_spans`: a token covers the original characters its normalized
        characters come from. ``allowed_special="none"`` gives ``encode_ordinary``'s ids.
        """
        ids = self.encode(text, allowed_special, disallowed_special)
        allowed, _ = self._specials.policy(allowed_special, disallowed_special)
        return ids, encoded_offsets(text, ids, self.vocab, self._chunker, self._specials, allowed)

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        num_workers: int | None = None,
        allowed_special: AllowedSpecial = "none_raise",
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[list[int]]:
        """``[self.encode(text, ...) for text in texts]``, in parallel.

        ``num_threads`` (tiktoken's spelling; default: the CPUs available) threads share the
        work; with the C kernel and a GPT-2/GPT-4/o200k pattern they run without the GIL.
        ``num_workers`` instead uses that many forked processes, which only pays where threads
        cannot run in parallel (the pure-Python encoder, other patterns, normalizers).
        """
        options = {"allowed_special": allowed_special, "disallowed_special": disallowed_special}
        if num_workers is not None:
            return encode_batch(self, texts, num_workers=num_workers, **options)
        return encode_batch_threads(self, texts, num_threads=num_threads, **options)

    def encode_to_numpy(
        self,
        text: str,
        allowed_special: AllowedSpecial = "none_raise",
        disallowed_special: DisallowedSpecial = "all",
        *,
        num_threads: int = 1,
    ):
        """:meth:`encode`'s ids as a uint32 numpy array, as tiktoken's ``encode_to_numpy``: with the C
        kernel and a pattern its scanner knows, no Python int is made per id."""
        array = self._plain_array(text, allowed_special, disallowed_special, num_threads)
        if array is not None:  # the common call (one per document) in one C call: see _plain_array
            return array
        array, plain_array = encode_to_numpy(self, text, allowed_special, disallowed_special, num_threads)
        if plain_array is not None:
            self._plain_array = plain_array
        return array

    def encode_batch_to_numpy(
        self,
        texts: Sequence[str],
        *,
        num_threads: int | None = None,
        allowed_special: AllowedSpecial = "none_raise",
        disallowed_special: DisallowedSpecial = "all",
    ):
        """``encode_batch`` as two numpy arrays: every id, flat, as uint32, and int64 ``offsets``
        (one more than there are texts): text ``i`` has ids ``ids[offsets[i]:offsets[i + 1]]``."""
        return encode_batch_to_numpy(self, texts, num_threads=num_threads, allowed_special=allowed_special,
                                     disallowed_special=disallowed_special)

    # ----------------------------------------------------------- persistence

    def save(self, file_prefix: str | os.PathLike) -> None:
        """Write ``<prefix>.model`` (minbpe v1, loadable by minbpe, when the tokenizer fits its
        layout; else hf_bbpe's extension, see engine/files/minbpe_model.py) and ``<prefix>.vocab``."""
        save_tokenizer(self, file_prefix)

    def load(self, model_file: str | os.PathLike) -> None:
        """Read a ``.model`` file written by minbpe or by :meth:`save` into this tokenizer.

        ``model_file`` is the file, or the prefix given to :meth:`save` (``"tok"`` reads
        ``tok.model`` if there is no file ``tok``).
        """
        model_file = model_file_path(model_file)
        contents = read_model_file(model_file)
        try:
            state = checked_model_contents(contents)
        except ValueError as exc:
            raise ModelFileError(f"{model_file}: {exc}") from None
        self.chunking = state.chunking
        self._set_tokens(state.mode, state.byte_ids, state.merges, state.unmerged, state.special_tokens,
                         normalized_specials=state.normalized_specials, roles=state.roles)
        repair_vocab_listing(model_file, self.vocab, self._merges)

    @classmethod
    def from_file(cls, model_file: str | os.PathLike) -> Tokenizer:
        """A new tokenizer read from a ``.model`` file or save prefix (for ``Tokenizer``: Regex or
        Basic, by its pattern or pipeline; called on a subclass, that class)."""
        contents = read_model_file(model_file_path(model_file))
        if contents.pre_tokenizer is not None:
            tok = cls._blank(None, contents.pre_tokenizer)
        else:
            tok = cls._blank(contents.pattern)
        tok.load(model_file)
        return tok

    def __repr__(self) -> str:
        merges = "" if self._merges is None else f", merges={len(self._merges)}"
        mode = "" if self._mode == "merges" else f", mode={self._mode!r}"
        return f"{type(self).__name__}(n_vocab={self.n_vocab}{merges}{mode}, special_tokens={len(self._special_tokens)})"


class BasicTokenizer(Tokenizer):
    """Byte-level BPE on the raw byte sequence, with no split pattern (minbpe's BasicTokenizer)."""

    def __init__(self, *, normalizer: Normalizer | str | Mapping | None = None) -> None:
        super().__init__(None, normalizer=normalizer)


class RegexTokenizer(Tokenizer):
    """Byte-level BPE within the chunks of a split pattern (GPT-4's by default, as in minbpe) or
    of a ``pre_tokenizer`` pipeline."""

    def __init__(
        self,
        pattern: str | None = None,
        *,
        pre_tokenizer: PreTokenizer | Mapping | None = None,
        normalizer: Normalizer | str | Mapping | None = None,
    ) -> None:
        if pattern == "":
            raise ValueError("the split pattern is empty: give a name (e.g. 'gpt4'), a regex, or None for GPT-4's")
        if pre_tokenizer is None:
            pattern = pattern or "gpt4"
        super().__init__(pattern, pre_tokenizer=pre_tokenizer, normalizer=normalizer)
