"""minbpe's tokenizer classes, with tiktoken's encode API on top.

A tokenizer is fully described by: how text is cut into chunks (an optional ``normalizer``, then
the split ``pattern`` or a ``pre_tokenizer`` pipeline), the ordered ``merges``
``{(left_id, right_id): new_id}``, the ids of the 256 single bytes (``byte_ids``, the identity
unless imported from GPT-2 or cl100k), the ``unmerged_tokens`` that no merge builds (none
unless imported), the ``mode`` that says how chunks are encoded, and ``special_tokens``, with
the ``roles`` some of them play for transformers (BOS, EOS, pad; never added by ``encode``).
Everything else (``vocab``, the chunk encoder, the special-token regex) is derived and rebuilt
when those change.

Modes (see engine/encoding/encoder.py): ``"merges"`` applies the merges (minbpe, GPT-2); ``"ignore_merges"``
first looks a whole chunk up in the vocabulary (``tokenizers``' ``ignore_merges: true``);
``"ranks"`` is tiktoken's algorithm: the whole-chunk lookup, then any two adjacent parts whose
bytes form a token merge, lowest id first. In ``"ranks"`` mode the vocabulary is what counts and
the merges are the ones the ranks imply, recovered when first asked for.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .chunking.chunking import Chunking
from .chunking.normalizers import Normalizer
from .chunking.pre_tokenizers import PreTokenizer
from .encoding.batches import encode_batch, encode_batch_threads, encode_batch_to_numpy, encode_to_numpy, no_plain_array
from .encoding.encoder import ChunkEncoder, DuplicateTokensError, TokenTable, encode_split_text
from .encoding.offsets import encoded_offsets
from .encoding.special_tokens import (
    AllowedSpecial,
    DisallowedSpecial,
    DisallowedSpecialToken,
    SpecialTokenIndex,
    TokenRoles,
    checked_normalized_specials,
    checked_special_tokens,
)
from .encoding.token_ids import single_token_id, token_id_list
from .encoding.vocabulary import (
    Merges,
    check_merge_list,
    check_table_ids,
    checked_byte_ids,
    checked_merges,
    checked_mode,
    checked_model_contents,
    checked_unmerged,
    id_bound,
    merge_list_mismatch,
    merges_from_array,
    merges_to_array,
    normal_ids,
    merges_miss_token,
    normal_vocab,
    rank_vocabulary,
    recovered_merges,
)
from .files.minbpe_model import ModelFileError, model_file_path, read_model_file, repair_vocab_listing, save_tokenizer
from .training.api import ChunkCounts, count_tokenizer_chunks, extend_tokenizer, train_tokenizer, train_tokenizer_from_counts
from .training.options import TrainingOptions
from .training.superwords import SuperwordConfig

class Tokenizer:
    """Byte-level BPE: train, encode, decode, save and load.

    ``pattern`` is a registered name ("gpt2", "gpt4", "o200k") or a regex; ``""`` or ``None``
    means no split (the whole text is one sequence, minbpe's BasicTokenizer). The chunks are the
    pattern's matches, as in tiktoken and minbpe. ``pre_tokenizer`` instead of ``pattern``: a
    pipeline of steps as ``tokenizers`` runs them (pre_tokenizers.py; an object or its JSON form). ``normalizer``: ``"NFC"``, ``"NFKC"``, ``"NFD"``, ``"NFKD"``, several joined
    by ``+``, or a normalizers.py object; text is normalized before it is split, as in
    ``tokenizers`` (each stretch between special tokens on its own).
    """

    _roles = TokenRoles()  # class default: also for tokenizers pickled before roles existed

    def __init__(
        self,
        pattern: str | None = None,
        *,
        pre_tokenizer: PreTokenizer | Mapping | None = None,
        normalizer: Normalizer | str | Mapping | None = None,
    ) -> None:
        self.chunking = Chunking.from_options(pattern, pre_tokenizer, normalizer)
        self._set_tokens("merges", list(range(256)), {}, {}, {}, normalized_specials=frozenset())

    def _set_tokens(self, mode: str, byte_ids: list[int], merges: Merges | None, unmerged: dict[int, bytes],
                    special_tokens: dict[str, int], *, rank_table: TokenTable | None = None,
                    normalized_specials: frozenset[str] | None = None, roles: TokenRoles | None = None) -> None:
        """Set the token state, checked by the caller (the module doc; ``rank_table`` and no
        merges: ``"ranks"`` mode before its merges are recovered), then rebuild what derives from it."""
        self._mode, self._byte_ids, self._merges, self._unmerged = mode, byte_ids, merges, unmerged
        self._rank_table, self._rank_vocab = rank_table, None  # (_rank_vocab: the table as a dict, made on use)
        self._special_tokens = special_tokens
        if normalized_specials is not None:
            self._normalized_specials = normalized_specials
        if roles is not None:
            self._roles = roles
        self._rebuild()

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
        for key in ("_scanner", "_encoder", "_vocab", "_rank_vocab", "_specials", "_plain_array"):
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

    @property
    def mode(self) -> str:
        """How chunks are encoded: ``"merges"``, ``"ignore_merges"`` or ``"ranks"`` (module doc)."""
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        mode = checked_mode(mode)
        if mode != self._mode:
            self._recover_merges()
            self._mode = mode
            self._rebuild()

    @property
    def unmerged_tokens(self) -> dict[int, bytes]:
        """``{id: bytes}`` of the normal tokens that no merge builds (treat it as read-only).

        A ``"merges"``-mode tokenizer never produces them; the other modes reach them as whole
        chunks, and ``"ranks"`` also by merging two parts that spell them.
        """
        self._recover_merges()
        return self._unmerged

    def merge_list_mismatch(self) -> int | None:
        """The lowest id of a normal token that plain BPE over :attr:`merges` encodes differently
        from this tokenizer, or None when the merge list alone is exact: what merge-list formats
        (which carry no mode) can hold. See engine/encoding/vocabulary.py."""
        return merge_list_mismatch(self)

    def merges_miss_token(self) -> int | None:
        """The lowest id of a normal token whose own bytes plain BPE over :attr:`merges` does not
        encode as that one token, or None: where none is, a whole-piece rule (``ignore_merges``)
        changes no id, so this tokenizer encodes alike with the rule and without it."""
        return merges_miss_token(self)

    def check_merge_list(self, format_name: str) -> None:
        """Raise ValueError naming ``format_name``, the first token that plain BPE over the merges
        would encode differently (:meth:`merge_list_mismatch`) and the formats that carry the mode."""
        check_merge_list(self, format_name)

    def _recover_merges(self) -> None:
        """In ``"ranks"`` mode, recover the merges from the ranks once (see from_ranks)."""
        if self._merges is None:
            self._merges, self._unmerged = recovered_merges(self._encoder, self._byte_ids, self._normal_vocab())
            self._rank_table = self._rank_vocab = None

    @property
    def merges(self) -> Merges:
        """``{(left_id, right_id): new_id}`` in merge order. Assign a new dict to change it."""
        self._recover_merges()
        return self._merges

    @merges.setter
    def merges(self, merges: Mapping[tuple[int, int], int]) -> None:
        self._recover_merges()
        self._merges = checked_merges(merges, self._byte_ids, self._unmerged)
        self._rebuild()

    @property
    def byte_ids(self) -> list[int]:
        """``byte_ids[b]`` is the token id of the single byte ``b`` (-1: none, see :meth:`from_merges`)."""
        return self._byte_ids

    @property
    def special_tokens(self) -> dict[str, int]:
        """``{special token string: id}``. Use :meth:`register_special_tokens` to add."""
        return self._special_tokens

    @special_tokens.setter
    def special_tokens(self, tokens: Mapping[str, int]) -> None:
        self._special_tokens = self._checked_specials(tokens, replace=True)  # a bad value changes nothing
        self._normalized_specials = self._normalized_specials.intersection(self._special_tokens)
        self._roles = self._roles.kept(self._special_tokens)
        self._rebuild()

    @property
    def roles(self) -> TokenRoles:
        """Which special tokens are transformers' ``bos_token``, ``eos_token`` and ``pad_token``,
        and whether BOS / EOS go around each sequence there (``add_bos_token``...), as the
        owner's Hugging Face tokenizer does: presets set them (Llama 3 adds ``<|begin_of_text|>``),
        ``BBPETokenizer`` and the tokenizer.json export use them. ``encode`` never adds a token.

        Assign a :class:`~special_tokens.TokenRoles` or a dict of its fields; every named token
        must be a special token (a role whose token stops being one is dropped).
        """
        return self._roles

    @roles.setter
    def roles(self, roles: TokenRoles | Mapping[str, Any]) -> None:
        if not isinstance(roles, TokenRoles):
            roles = TokenRoles.from_kwargs(roles)
        self._roles = roles.checked(self._special_tokens)

    @property
    def normalized_special_tokens(self) -> frozenset[str]:
        """The special tokens found in the normalized text (``tokenizers``' ``normalized: true``).

        ``encode`` first finds the other special tokens in the text as given; each stretch between
        them is normalized, and these are found in it by their normalized spelling, as
        ``tokenizers`` finds added tokens marked ``normalized`` (so "café" under NFD also matches
        the precomposed "café" in text). Empty unless set; every name must be a special token.
        """
        return self._normalized_specials

    @normalized_special_tokens.setter
    def normalized_special_tokens(self, tokens: Iterable[str]) -> None:
        self._normalized_specials = checked_normalized_specials(tokens, self._special_tokens)
        self._rebuild()

    def register_special_tokens(self, special_tokens: Mapping[str, int], *, allow_large_ids: bool = False) -> None:
        """Add special tokens ``{string: id}``.

        Each id must be a non-negative int that no other token uses, at most 2**20 above the
        largest normal id unless ``allow_large_ids`` (an id is a row of a model's embedding);
        an existing special token keeps its id (assign ``special_tokens`` to renumber). A
        ValueError names the first token at fault, and nothing is registered.
        """
        self._special_tokens = self._checked_specials(special_tokens, allow_large_ids=allow_large_ids)
        self._rebuild()

    def _checked_specials(
        self, special_tokens: Mapping[str, int], *, replace: bool = False, allow_large_ids: bool = False
    ) -> dict[str, int]:
        """The current special tokens (none if ``replace``) plus ``special_tokens``, checked."""
        rank_ids = None if self._rank_table is None else self._rank_table.ids
        return checked_special_tokens(special_tokens, existing={} if replace else self._special_tokens,
                                      normal_ids=normal_ids(self._byte_ids, self._unmerged, self._merges, rank_ids),
                                      allow_large_ids=allow_large_ids)

    def _normal_vocab(self) -> dict[int, bytes]:
        """``{id: bytes}`` of every non-special token: bytes, unmerged tokens, then merges."""
        if self._rank_table is not None:
            if self._rank_vocab is None:
                self._rank_vocab = self._rank_table.to_vocab()
            return self._rank_vocab
        return normal_vocab(self._byte_ids, self._unmerged, self._merges)

    def _rebuild(self) -> None:
        self._vocab: dict[int, bytes] | None = None  # built on first use: encoding never needs it
        if self._mode == "merges":
            self._encoder = ChunkEncoder(self._merges, self._byte_ids)
        else:
            normal = self._rank_table if self._rank_table is not None else self._normal_vocab()
            merges = {} if self._mode == "ranks" else self._merges
            self._encoder = ChunkEncoder(merges, self._byte_ids, mode=self._mode, vocab=normal)
        self._specials = SpecialTokenIndex(self._special_tokens, self._normalized_specials)
        # encode_to_numpy's one C call for the special-token arguments of its last call that needed
        # no special-token handling (the kernel's PlainArrayCall); it answers None to any other call
        self._plain_array: Callable = no_plain_array

    @property
    def vocab(self) -> dict[int, bytes]:
        """``{id: token bytes}`` for every token, special tokens included (treat it as read-only)."""
        if self._vocab is None:
            vocab = dict(self._normal_vocab())
            for token, idx in self._special_tokens.items():
                vocab[idx] = token.encode("utf-8")
            self._vocab = vocab
        return self._vocab

    @property
    def n_vocab(self) -> int:
        """One more than the largest token id (tiktoken's definition)."""
        ranks = None if self._rank_table is None else self._rank_table.ids
        return id_bound(self._byte_ids, self._unmerged, self._merges, ranks, self._special_tokens.values())

    def mergeable_ranks(self) -> dict[bytes, int]:
        """``{token bytes: id}`` for every non-special token, ready for ``tiktoken.Encoding``."""
        specials = set(self._special_tokens.values())
        return {token: idx for idx, token in sorted(self.vocab.items()) if idx not in specials}

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
    ) -> None:
        """Learn ``vocab_size - 256`` merges from a str, an iterable of documents, or files.

        ``files=`` is a path or a list (text files, ``.jsonl``, ``.parquet``, as ``tokenizers``'
        ``train(files=...)`` takes them); ``pathlib.Path`` objects given as ``text`` are files
        too, a str never is. A ``datasets`` dataset or a ``ray.data.Dataset`` is read by column.
        The keywords are documented once, in :class:`~hf_bbpe.engine.training.options.TrainingOptions`.
        Special tokens already registered keep their ids; merges skip them.
        """
        train_tokenizer(self, text, files, vocab_size, TrainingOptions.from_arguments(locals()))

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

    def reset_to_bytes(self) -> None:
        """Training's start (engine/training/api.py): the 256 byte tokens and no merges, in
        ``"merges"`` mode; special tokens keep their ids."""
        self._set_tokens("merges", list(range(256)), {}, {}, self._special_tokens)

    def adopt_merges(self, merges: Merges) -> None:
        """Training's end (engine/training/api.py): ``merges``, valid by construction (they are not
        checked, unlike an assignment to :attr:`merges`), replace the current ones."""
        self._merges = merges
        self._rebuild()

    @property
    def encoder(self) -> ChunkEncoder:
        """The chunk encoder (engine/encoding/encoder.py: the C kernel or its Python twin), made
        from the merges or ranks: what batches and training encode chunks with. Read-only."""
        return self._encoder

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

    def encode_single_piece(self, piece: str | bytes) -> list[int]:
        """Apply the merges to ``piece`` as one chunk: no split pattern, no special tokens.

        This is how the tokenizer spells a byte string it was not trained on as one unit, e.g.
        a new token's bytes in terms of an older vocabulary (sub-token initialisation).
        """
        data = piece.encode("utf-8") if isinstance(piece, str) else bytes(piece)
        return self._encoder.encode_bytes(data)

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

    @property
    def special_token_index(self) -> SpecialTokenIndex:
        """The special tokens as ``encode`` uses them, with the policies and regexes it derived
        (engine/encoding/special_tokens.py): for the engine's batch encoders. Read-only."""
        return self._specials

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

    def clear_cache(self) -> None:
        """Give back the memory of the encoding caches, which grow with use and live as long as
        the tokenizer (on 16 MB of mixed text, about 60 MB: short chunks, pieces that needed BPE,
        a spare ids buffer); the next encode fills them again. Ids never depend on them."""
        self._encoder.clear_cache()

    # -------------------------------------------------------------- decoding

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of a sequence of ids (a list, tuple, numpy array, torch tensor, ``array``...).

        An unknown id raises ValueError naming it; a non-integer id (``65.9``) raises
        :class:`~token_ids.TokenIdTypeError` (a TypeError and a ValueError) naming it.
        """
        vocab = self.vocab
        try:
            return b"".join([vocab[i] for i in token_id_list(ids)])
        except KeyError as exc:
            raise ValueError(f"unknown token id {exc.args[0]!r} (n_vocab={self.n_vocab})") from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """Decode ids to text; invalid UTF-8 is replaced by U+FFFD (``errors="strict"`` raises)."""
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token id (an int, or a 0-d array or tensor)."""
        token = single_token_id(token)
        try:
            return self.vocab[token]
        except KeyError:
            raise ValueError(f"unknown token id {token!r} (n_vocab={self.n_vocab})") from None

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
