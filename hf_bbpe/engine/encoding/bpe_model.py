"""A tokenizer's tokens, and what encodes and decodes with them: the BPE model.

:class:`BPEModel` holds the state the tokenizer module's doc lists apart from chunking: the ids of
the 256 single bytes, the merges in order (or, in ``"ranks"`` mode before they are recovered,
tiktoken's ranks as a token table), the unmerged tokens, the mode, and the special tokens with
their roles. Whenever that state changes it rebuilds what derives from it: the chunk encoder
(encoder.py) and the special tokens' index (special_tokens.py); the vocabulary is made on first
use. ``Tokenizer`` (engine/tokenizer.py) is a BPEModel with chunking, training and files; the
checks of each part are in vocabulary.py.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from .batches import no_plain_array
from .decoding import Decoding
from .encoder import ChunkEncoder, TokenTable
from .special_tokens import SpecialTokenIndex, TokenRoles, checked_normalized_specials, checked_special_tokens
from .token_ids import single_token_id
from .vocabulary import (
    Merges,
    check_merge_list,
    checked_merges,
    checked_mode,
    id_bound,
    merge_list_mismatch,
    merges_miss_token,
    normal_ids,
    normal_vocab,
    recovered_merges,
)


class BPEModel:
    """The tokens of a byte-level BPE tokenizer and their encoder (see the module doc): the base
    of ``Tokenizer``, whose constructors set the tokens (:meth:`_set_tokens`); not made alone."""

    _roles = TokenRoles()  # class default: also for tokenizers pickled before roles existed

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

    @property
    def mode(self) -> str:
        """How chunks are encoded: ``"merges"``, ``"ignore_merges"`` or ``"ranks"`` (engine/tokenizer.py's
        module doc)."""
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
        self._decoder: Decoding | None = None  # the same (decoding.py)
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

    def encode_single_piece(self, piece: str | bytes) -> list[int]:
        """Apply the merges to ``piece`` as one chunk: no split pattern, no special tokens.

        This is how the tokenizer spells a byte string it was not trained on as one unit, e.g.
        a new token's bytes in terms of an older vocabulary (sub-token initialisation).
        """
        data = piece.encode("utf-8") if isinstance(piece, str) else bytes(piece)
        return self._encoder.encode_bytes(data)

    @property
    def special_token_index(self) -> SpecialTokenIndex:
        """The special tokens as ``encode`` uses them, with the policies and regexes it derived
        (engine/encoding/special_tokens.py): for the engine's batch encoders. Read-only."""
        return self._specials

    def clear_cache(self) -> None:
        """Give back the memory of the encoding caches, which grow with use and live as long as
        the tokenizer (on 16 MB of mixed text, about 60 MB: short chunks, pieces that needed BPE,
        a spare ids buffer); the next encode fills them again. Ids never depend on them."""
        self._encoder.clear_cache()

    # ---------------------------------------------------------------- decoding
    # (engine/encoding/decoding.py: the C decoder or its twin, made on first use; every method
    # takes ids as users hold them, see token_ids.py. ``skip_special_tokens`` leaves out the
    # registered special tokens, ``skip_ids`` any other ids: pass the same frozenset each time,
    # its mask is kept. An unknown or negative id raises ValueError naming it and its position.)

    def _decoding(self) -> Decoding:
        decoding = self._decoder
        if decoding is None:
            specials = self._special_tokens
            if self._rank_table is not None:  # its flat buffers as they are, the special tokens after them
                table = self._rank_table
                spelled = [token.encode("utf-8") for token in specials]
                tokens: TokenTable | dict[int, bytes] = TokenTable(
                    table.data + b"".join(spelled), array("q", [*table.lengths, *map(len, spelled)]),
                    array("q", [*table.ids, *specials.values()]))
            else:
                tokens = self.vocab
            decoding = self._decoder = Decoding(tokens, list(specials.values()), self.n_vocab)
        return decoding

    def decode_bytes(self, ids: Iterable[int], *, skip_special_tokens: bool = False,
                     skip_ids: Collection[int] | None = None) -> bytes:
        """The bytes of a sequence of ids (a list, tuple, numpy array, torch tensor, ``array``...).

        An unknown or negative id raises ValueError naming it and its position; a non-integer id
        (``65.9``) raises :class:`~token_ids.TokenIdTypeError` (a TypeError and a ValueError) naming it.
        """
        return (self._decoder or self._decoding()).decode_bytes(ids, skip_special_tokens=skip_special_tokens,
                                                                skip_ids=skip_ids)

    def decode(self, ids: Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False,
               skip_ids: Collection[int] | None = None) -> str:
        """Decode ids to text; invalid UTF-8 is handled by ``errors`` as ``bytes.decode`` does it
        (``"replace"``: U+FFFD, ``"strict"`` raises). Ids and skipping as in :meth:`decode_bytes`."""
        decoding = self._decoder or self._decoding()
        if not skip_special_tokens and skip_ids is None:  # (the common call, straight to the kernel)
            return decoding.kernel.decode(ids, errors, None)
        return decoding.decode(ids, errors, skip_special_tokens=skip_special_tokens, skip_ids=skip_ids)

    def decode_bytes_batch(self, batch: Iterable[Iterable[int]], *, num_threads: int = 1,
                           skip_special_tokens: bool = False, skip_ids: Collection[int] | None = None) -> list[bytes]:
        """:meth:`decode_bytes` of each sequence of ``batch``, on up to ``num_threads`` threads
        without the GIL. An error names the id, its position and its sequence."""
        return (self._decoder or self._decoding()).decode_bytes_batch(
            batch, num_threads=num_threads, skip_special_tokens=skip_special_tokens, skip_ids=skip_ids)

    def decode_batch(self, batch: Iterable[Iterable[int]], *, num_threads: int = 1, errors: str = "replace",
                     skip_special_tokens: bool = False, skip_ids: Collection[int] | None = None) -> list[str]:
        """:meth:`decode` of each sequence of ``batch``, on up to ``num_threads`` threads
        without the GIL. An error names the id, its position and its sequence."""
        return (self._decoder or self._decoding()).decode_batch(
            batch, num_threads=num_threads, errors=errors, skip_special_tokens=skip_special_tokens, skip_ids=skip_ids)

    def decode_with_offsets(self, ids: Iterable[int]) -> tuple[str, list[int]]:
        """tiktoken's ``Encoding.decode_with_offsets``: the text and, for each token, the index in
        the text of the first character that holds one of its bytes. A token that starts inside a
        multibyte character gets that character's index, the same as the token before it (which
        started the character). As in tiktoken, bytes that are not valid UTF-8 raise
        UnicodeDecodeError; special tokens count as their text."""
        return (self._decoder or self._decoding()).decode_with_offsets(ids)

    def decode_stream(self, skip_special_tokens: bool = False, prefill: Iterable[int] | None = None, *,
                      errors: str = "replace", skip_ids: Collection[int] | None = None) -> Any:
        """A stream that decodes ids as a server generates them, like ``tokenizers``'
        ``DecodeStream``: ``stream.step(id)`` (or several ids) returns the new text as soon as it
        is whole UTF-8, or None while nothing is (the bytes of a partial character wait for the
        next step). ``prefill``: the prompt's ids, whose text is not returned (a character it
        leaves unfinished is, by the step that ends it). ``stream.flush()`` ends the stream: the
        bytes still waiting, decoded with ``errors``, or None. So the steps' texts and the flush,
        joined, are :meth:`decode` of all the ids, wherever they are cut.

        Unlike ``DecodeStream``, a byte sequence that can never be valid UTF-8 is replaced at the
        step that shows it, not held until more text comes; and a prefill that ends in a partial
        character does not make the next step return the prompt's text.
        """
        return (self._decoder or self._decoding()).decode_stream(skip_special_tokens, prefill, errors=errors,
                                                                 skip_ids=skip_ids)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token id (an int, or a 0-d array or tensor)."""
        token = single_token_id(token)
        try:
            return self.vocab[token]
        except KeyError:
            raise ValueError(f"unknown token id {token!r} (n_vocab={self.n_vocab})") from None
