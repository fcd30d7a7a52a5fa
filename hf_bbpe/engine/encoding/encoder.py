"""The chunk encoder: applies learned merges to one pre-tokenized chunk.

The result is minbpe's ``_encode_chunk`` and tiktoken's ``byte_pair_merge``: repeatedly merge
the adjacent pair with the lowest merged id, the leftmost one on ties. Short chunks (nearly all
of them) use that loop directly, keeping each pair's lookup until a merge next to it changes it;
long chunks use a heap over a linked list, so 1 MB without a split point costs O(n log n), not
O(n^2). A bounded cache maps frequent chunks to their ids. The C kernel encodes a long chunk in
``"merges"`` mode from its words, each through its caches, and re-encodes only where two words'
tokens merge (see ``encode_by_parts`` in ``csrc/encode/``): the same ids, and SuperBPE's
sentence-long chunks at the speed of their words.

Three modes say which pairs merge (see ``Tokenizer.mode``):

* ``"merges"``: the pairs of the merge list (minbpe, GPT-2, ``tokenizers``' default);
* ``"ignore_merges"``: the same, but a chunk whose bytes are a token is that token, as
  ``tokenizers`` does with ``ignore_merges: true``;
* ``"ranks"``: tiktoken's rule. Any two adjacent parts whose bytes together are a token merge,
  by that token's id (its rank), and a chunk that is a token is that token. The pair table then
  holds every split of every token into two tokens, so tokens that no merge builds are reached
  as tiktoken reaches them. The token of id 2**32 - 1 is never made by a merge: tiktoken's ranks
  are u32 and its merge loops read ``u32::MAX`` as "no merge", so it reaches that token only as
  a whole chunk or a single byte.

Ids are any ints from 0 to 2**32 - 1 (tiktoken's range). The C kernel indexes tables by id in
31 bits, so ids above that, or very sparse ones, are renumbered for it in the same order (which
keeps every merge decision) and translated back on the way out.

The same algorithm is compiled in ``csrc/encode/``, which does the work when the extension is
built (an installed hf_bbpe). The Python version (bpe_reference.py) is what runs where only source files can go:
the copy of the tokenizer code that transformers saves beside a model for
``trust_remote_code=True``. Tests check that both give identical ids.
"""

from __future__ import annotations

import functools
import importlib
import operator
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..chunking.chunking import Chunking
from ..chunking.patterns import part_scanner
from .bpe_reference import merge_long, merge_short, ranks_below

try:  # imported by name, not "from .", so that remote-code copies of this file load without it
    _native = importlib.import_module("._chunk_bpe", __package__)
except ImportError:
    _native = None

UNMERGEABLE_ID = 2**32 - 1
"""``"ranks"`` mode: the id no merge makes (tiktoken's ``Rank::MAX``, which means "no rank")."""
_KERNEL_MAX_ID = 2**31 - 1  # the C kernel's ids are int32
_KERNEL_DENSE_IDS = 1 << 20  # below this any ids are indexed directly; above, only 8x as many as there are ids
_LONG_CHUNK = 64  # bytes; above this the heap path wins
_CACHE_MAX_ENTRIES = 1 << 18  # the Python encoder's dict of chunks
_KERNEL_CACHE_MAX_ENTRIES = 1 << 20  # the C kernel's piece cache, whose table grows to hold them
_CACHE_MAX_CHUNK = 128  # characters; longer chunks are rare and not worth keeping


MODES = ("merges", "ignore_merges", "ranks")
NEVER_IN_UTF8 = frozenset({0xC0, 0xC1, *range(0xF5, 0x100)})
"""The bytes that UTF-8 never uses (nor the ``surrogatepass`` form of a lone surrogate): text
never needs a token for them, so a vocabulary may lack them (``tokenizers``' BpeTrainer leaves
them out unless it is given the ByteLevel alphabet)."""


class DuplicateTokensError(ValueError):
    """Two ids of a vocabulary that must be distinct byte strings spell the same bytes."""

    def __init__(self, token: bytes, first: int, second: int) -> None:
        super().__init__(f"token {token!r} has two ids, {min(first, second)} and {max(first, second)}")
        self.token, self.first, self.second = token, first, second


class MissingByteError(ValueError):
    """Text needs a single byte that the vocabulary has no token for (a rank file or a
    tokenizer.json may lack one: tiktoken loads it, then fails on such text; ``tokenizers`` drops
    the character); ``.byte`` is the byte value."""

    def __init__(self, byte: int) -> None:
        super().__init__(f"cannot encode the byte {bytes([byte])!r} ({byte:#04x}): the vocabulary has no token for it "
                         "on its own (its file lists no such single byte: tiktoken fails on this text, tokenizers "
                         "drops the character)")
        self.byte = byte

    def __reduce__(self) -> tuple[type, tuple[int]]:
        return type(self), (self.byte,)


class TokenTable:
    """A vocabulary ``{id: bytes}`` as three flat buffers, the form the C kernel reads.

    Token ``i`` is ``data[start_i : start_i + lengths[i]]`` (tokens laid end to end) with id
    ``ids[i]``; ``lengths`` and ``ids`` are int64 arrays. Importers build one straight from a
    file (no Python object per token), which is what keeps loading a 200k-token vocabulary fast.
    """

    __slots__ = ("data", "lengths", "ids")

    def __init__(self, data: bytes, lengths: Sequence[int], ids: Sequence[int]) -> None:
        self.data = bytes(data)
        self.lengths = lengths if isinstance(lengths, array) and lengths.typecode == "q" else array("q", lengths)
        self.ids = ids if isinstance(ids, array) and ids.typecode == "q" else array("q", ids)
        if len(self.lengths) != len(self.ids) or sum(self.lengths) != len(self.data):
            raise ValueError("token table: lengths, ids and data do not match")

    @classmethod
    def from_vocab(cls, vocab: Mapping[int, bytes]) -> TokenTable:
        values = list(vocab.values())
        return cls(b"".join(values), array("q", map(len, values)), array("q", vocab.keys()))

    def to_vocab(self) -> dict[int, bytes]:
        """``{id: bytes}`` in id order."""
        data = self.data
        vocab: dict[int, bytes] = {}
        pos = 0
        for n, idx in zip(self.lengths, self.ids):
            vocab[idx] = data[pos : pos + n]
            pos += n
        if any(map(operator.gt, self.ids, self.ids[1:])):
            vocab = dict(sorted(vocab.items()))
        return vocab


class ChunkEncoder:
    """Encodes chunks of text with a fixed set of merges.

    ``merges`` maps ``(left_id, right_id)`` to the merged id, where a lower merged id means an
    earlier merge. ``byte_ids[b]`` is the id of the single byte ``b`` (the identity for trained
    tokenizers; a permutation for GPT-2 and cl100k). ``mode`` is one of :data:`MODES` (see the
    module doc); the two other than ``"merges"`` need ``vocab``, ``{id: bytes}`` of every
    normal token, or the same as a :class:`TokenTable` (a byte string listed under two ids is
    found as the lower one).

    A byte may have no token (``byte_ids[b] == -1``), as in a rank file that tiktoken loads or a
    tokenizer.json that ``tokenizers``' BpeTrainer made: the byte then gets a stand-in id above
    every real one, which merges as its byte does (no merge names it), and any encoding that would
    output it raises :class:`MissingByteError`. Text never holds a byte of :data:`NEVER_IN_UTF8`,
    so when only those are missing, only :meth:`encode_bytes` checks its output.
    """

    def __init__(
        self,
        merges: dict[tuple[int, int], int],
        byte_ids: Sequence[int],
        *,
        mode: str = "merges",
        vocab: Mapping[int, bytes] | TokenTable | None = None,
        native: bool = True,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        if mode != "merges" and vocab is None:
            raise ValueError(f"mode {mode!r} needs the vocabulary")
        self._given = (tuple(byte_ids), vocab if mode != "merges" else None)  # what pickling rebuilds from
        self.merges = merges
        self.byte_ids = tuple(byte_ids)
        self.mode = mode
        self.vocab = vocab if mode != "merges" else None
        self._stand_ins: dict[int, int] = {}  # stand-in id -> the byte without a token
        if -1 in self.byte_ids:
            self._stand_in_missing_bytes()
        self._identity = self.byte_ids == tuple(range(256))
        self._cache: dict[str, tuple[int, ...]] = {}
        if native and _native is not None:
            tokens = None
            if self.vocab is not None:
                table = self.vocab if isinstance(self.vocab, TokenTable) else TokenTable.from_vocab(self.vocab)
                tokens = (table.data, table.lengths, table.ids)
            kernel_merges, kernel_byte_ids = merges, self.byte_ids
            wide = _renumbering(merges, self.byte_ids, tokens[2] if tokens else ())
            unmergeable = UNMERGEABLE_ID if mode == "ranks" else -1
            if wide is not None:
                numbering = {idx: k for k, idx in enumerate(wide)}
                number = numbering.__getitem__
                kernel_merges = {(number(a), number(b)): number(m) for (a, b), m in merges.items()}
                kernel_byte_ids = tuple(map(number, self.byte_ids))
                if tokens:
                    tokens = (tokens[0], tokens[1], array("q", map(number, tokens[2])))
                unmergeable = numbering.get(UNMERGEABLE_ID, -1) if mode == "ranks" else -1
            kernel = _native.ChunkBPE(kernel_merges, kernel_byte_ids, _KERNEL_CACHE_MAX_ENTRIES, tokens, mode == "ranks",
                                      unmergeable)
            if mode == "merges" and part_scanner() is not None:  # long pieces (SuperBPE's sentences) by parts
                kernel.split_long_pieces(part_scanner())
            self._kernel = kernel
            self.encode_chunks = kernel.encode_chunks
            self.encode_bytes = kernel.encode_bytes
            self.encode_text = kernel.encode_text
            self.encode_texts = kernel.encode_texts
            self.clear_cache = kernel.clear_cache
            self._wide = wide
            if wide is None and self._text_safe:  # else the ids need translating or checking
                self.encode_text_array = kernel.encode_text_array
                self.plain_array_call = functools.partial(_native.PlainArrayCall, kernel)
            if wide is not None:
                self._translate_outputs(wide)
            if self._stand_ins:
                self._check_outputs()
        else:
            self._whole: dict[bytes, int] | None = None
            self._pair_rank = merges.get
            if isinstance(self.vocab, TokenTable):
                self.vocab = self.vocab.to_vocab()
            self._duplicate = None
            if self.vocab is not None:
                self._whole = whole = {}
                for idx, data in self.vocab.items():
                    first = whole.setdefault(data, idx)
                    if first != idx:
                        self._duplicate = self._duplicate or (first, idx)
                        whole[data] = min(first, idx)
                if mode == "ranks":
                    self._pair_rank = self._rank_of_bytes
            if self._stand_ins:
                self._check_outputs()

    _stand_ins: dict[int, int] = {}
    _text_safe = True  # no stand-in that text can reach (see _check_outputs)

    def _stand_in_missing_bytes(self) -> None:
        """Give each byte without a token a stand-in id (and token, in the modes with a
        vocabulary) above every real id."""
        table = None
        if self.vocab is not None:
            table = self.vocab if isinstance(self.vocab, TokenTable) else TokenTable.from_vocab(self.vocab)
            top = max(table.ids, default=-1)
        else:
            top = max((idx for pair, new in self.merges.items() for idx in (*pair, new)), default=-1)
        first = max(top, max(self.byte_ids)) + 1
        missing = [b for b, idx in enumerate(self.byte_ids) if idx < 0]
        self._stand_ins = {first + k: b for k, b in enumerate(missing)}
        self._text_safe = NEVER_IN_UTF8.issuperset(missing)
        ids = dict(zip(missing, self._stand_ins))
        self.byte_ids = tuple(ids.get(b, idx) for b, idx in enumerate(self.byte_ids))
        if table is not None:
            self.vocab = TokenTable(table.data + bytes(missing), array("q", [*table.lengths, *[1] * len(missing)]),
                                    array("q", [*table.ids, *self._stand_ins]))
        self._first_stand_in = first

    def _translate_outputs(self, wide: list[int]) -> None:
        """Wrap the kernel's methods so that its renumbered ids come back as the real ones
        (``wide[k]`` is the real id of kernel id ``k``)."""
        real = wide.__getitem__
        kernel = self._kernel

        def ids_of(ids):
            return None if ids is None else list(map(real, ids))

        def encode_texts(texts, scanner, as_lists, num_threads=1):
            result = kernel.encode_texts(texts, scanner, as_lists, num_threads)
            if as_lists:
                return list(map(ids_of, result))
            flat, ends, surrogates = result
            try:
                return array("I", map(real, memoryview(flat))).tobytes(), ends, surrogates
            except OverflowError:  # only a stand-in for a byte without a token is past 2**32 - 1
                stand_in = next(i for i in map(real, memoryview(flat)) if i > UNMERGEABLE_ID)
                raise MissingByteError(self._stand_ins[stand_in]) from None

        def recover_merges():
            merges, unmerged = kernel.recover_merges()
            return {(real(a), real(b)): real(m) for (a, b), m in merges.items()}, list(map(real, unmerged))

        def first_duplicate():
            duplicate = kernel.first_duplicate()
            return None if duplicate is None else tuple(map(real, duplicate))

        self.encode_chunks = lambda chunks: ids_of(kernel.encode_chunks(chunks))
        self.encode_bytes = lambda data: ids_of(kernel.encode_bytes(data))
        self.encode_text = lambda text, scanner, num_threads=1: ids_of(kernel.encode_text(text, scanner, num_threads))
        self.encode_texts = encode_texts
        self._recover_merges_native = recover_merges
        self._first_duplicate_native = first_duplicate

    def _check_outputs(self) -> None:
        """Wrap every encoding method so that output holding a stand-in id raises MissingByteError
        (only :meth:`encode_bytes` when text cannot reach a stand-in: every chunk of text is UTF-8)."""
        first, stand_ins = self._first_stand_in, self._stand_ins

        def check(ids):
            if ids and max(ids) >= first:
                raise MissingByteError(stand_ins[next(i for i in ids if i >= first)])
            return ids

        encode_chunks, encode_bytes = self.encode_chunks, self.encode_bytes
        self.encode_bytes = lambda data: check(encode_bytes(data))
        if self._text_safe:
            return
        self.encode_chunks = lambda chunks: check(encode_chunks(chunks))
        if "encode_text" in self.__dict__:
            encode_text, encode_texts = self.encode_text, self.encode_texts

            def encode_texts_checked(texts, scanner, as_lists, num_threads=1):
                result = encode_texts(texts, scanner, as_lists, num_threads)
                for ids in result if as_lists else [memoryview(result[0]).cast("B").cast("I")]:
                    check(ids)
                return result

            self.encode_text = lambda text, scanner, num_threads=1: check(encode_text(text, scanner, num_threads))
            self.encode_texts = encode_texts_checked

    def _rank_of_bytes(self, pair: tuple[int, int], default: int | None = None) -> int | None:
        """``"ranks"`` mode: the id of the token that the two parts spell together, if any."""
        vocab = self.vocab
        try:
            idx = self._whole.get(vocab[pair[0]] + vocab[pair[1]], default)
        except KeyError:
            return default
        return default if idx == UNMERGEABLE_ID else idx

    def __getstate__(self) -> dict:
        byte_ids, vocab = self._given
        return {"merges": self.merges, "byte_ids": byte_ids, "mode": self.mode, "vocab": vocab, "native": self.native}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["merges"], state["byte_ids"], mode=state.get("mode", "merges"), vocab=state.get("vocab"),
                      native=state["native"])

    def clear_cache(self) -> None:
        """Empty the caches of encoded chunks and give their memory back (the C kernel's caches
        grow with use, to tens of megabytes on a large corpus)."""
        self._cache.clear()

    @property
    def native(self) -> bool:
        """True when the C kernel encodes (then ``encode_text`` and ``encode_texts`` work)."""
        return "_kernel" in self.__dict__

    def encode_text(self, text: str, scanner: object, num_threads: int = 1) -> list[int] | None:
        """Split ``text`` with a C scanner (``patterns.native_scanner``) and encode it in one call,
        without the GIL (a text of 512 KB of UTF-8 or more on up to ``num_threads`` threads); None
        when it cannot (no C kernel here, or a lone surrogate in ``text``)."""
        return None

    def encode_text_array(self, text: str, scanner: object, num_threads: int = 1) -> object | None:
        """:meth:`encode_text`'s ids as a writable uint32 buffer (``numpy.frombuffer`` takes it
        without a copy), or None where :meth:`encode_text` gives None or the kernel's ids are
        not the real ones (renumbered wide ids, stand-ins for missing bytes)."""
        return None

    def plain_array_call(self, scanner: object, allowed_special: object,
                         disallowed_special: object) -> Callable | None:
        """``f(text, allowed_special, disallowed_special, num_threads)``: :meth:`encode_text_array`'s
        ids as a uint32 numpy array in one C call, for these two argument objects (a call that
        needs no special-token handling) and one thread, else None; or None here when
        :meth:`encode_text_array` is not the kernel's own."""
        return None

    def encode_chunks(self, chunks: Iterable[str]) -> list[int]:
        """Encode each chunk and concatenate the ids (the hot loop of ``encode``)."""
        out: list[int] = []
        extend = out.extend
        cache = self._cache
        get = cache.get
        encode_bytes = self.encode_bytes
        for chunk in chunks:
            ids = get(chunk)
            if ids is None:
                ids = tuple(encode_bytes(chunk.encode("utf-8")))
                if len(chunk) <= _CACHE_MAX_CHUNK:
                    if len(cache) >= _CACHE_MAX_ENTRIES:
                        cache.clear()
                    cache[chunk] = ids
            extend(ids)
        return out

    def encode_pieces(self, pieces: bytes | memoryview, lengths: bytes | memoryview | array,
                      num_threads: int = 1) -> tuple[memoryview | array, memoryview | array]:
        """Each piece of ``pieces`` (UTF-8 end to end; ``lengths``: int32 each, as chunk counting's
        buffers hold them) encoded whole, as :meth:`encode_bytes` encodes it: ``(ids, counts)``,
        every piece's ids end to end and the number of ids of each, as int32 buffers (``ids``
        writable, for a merge loop that works in it). ``extend`` and SuperBPE's stage 2 segment
        a corpus's distinct chunks so; the C kernel encodes them without a Python object per
        piece, on up to ``num_threads`` threads."""
        if self.native and self.__dict__.get("_wide") is None and not self._stand_ins:
            ids, counts = self._kernel.encode_pieces(pieces, lengths, num_threads)
            return memoryview(ids).cast("B").cast("i"), memoryview(counts).cast("i")
        data = memoryview(pieces).cast("B")
        ids, counts = array("i"), array("i")
        at = 0
        for n in memoryview(lengths).cast("B").cast("i"):
            piece = self.encode_bytes(data[at : at + n].tobytes())
            ids.extend(piece)
            counts.append(len(piece))
            at += n
        return ids, counts

    def encode_bytes(self, data: bytes) -> list[int]:
        """Encode one chunk given as bytes (no cache)."""
        if self._whole is not None and len(data) > 1:
            idx = self._whole.get(data)
            if idx is not None:
                return [idx]
        ids = list(data) if self._identity else [self.byte_ids[b] for b in data]
        if len(ids) < 2:
            return ids
        if len(ids) > _LONG_CHUNK:
            return self._merge_long(ids)
        return self._merge_short(ids)

    def _merge_short(self, ids: list[int], limit: int | None = None) -> list[int]:
        return merge_short(ids, ranks_below(self._pair_rank, limit))

    def _merge_long(self, ids: list[int], limit: int | None = None) -> list[int]:
        return merge_long(ids, ranks_below(self._pair_rank, limit))

    def first_duplicate(self) -> tuple[int, int] | None:
        """The ids of the first two vocabulary tokens found with the same bytes, or None."""
        if self.native:
            return self._first_duplicate_native() if self._wide else self._kernel.first_duplicate()
        return self._duplicate

    def recover_merges(self) -> tuple[dict[tuple[int, int], int], list[int]]:
        """``"ranks"`` mode: the merge list the ranks imply, and the ids no merge builds.

        The token of id ``r`` is made by the two parts that this encoder's merge loop, allowed
        only ids below ``r``, leaves on its bytes (minbpe's ``recover_merges``); a token left in
        more parts is built by no merge (Llama 3 has 678 such tokens). Returns ``({(left, right):
        id} in id order, [unmerged ids])``; single bytes are neither.
        """
        if self.mode != "ranks":
            raise ValueError("recover_merges needs rank mode")
        if self.native:
            merges, unmerged = self._recover_merges_native() if self._wide else self._kernel.recover_merges()
            return _unmergeable_unmerged(merges, unmerged)
        merges: dict[tuple[int, int], int] = {}
        unmerged: list[int] = []
        byte_ids = self.byte_ids
        for idx, data in sorted(self.vocab.items()):
            if len(data) == 1 and byte_ids[data[0]] == idx:
                continue
            parts: list[int] = []
            if len(data) >= 2 and self._whole.get(data) == idx:
                ids = [byte_ids[b] for b in data]
                parts = self._merge_long(ids, idx) if len(ids) > _LONG_CHUNK else self._merge_short(ids, idx)
            if len(parts) == 2:
                merges[(parts[0], parts[1])] = idx
            else:
                unmerged.append(idx)
        return _unmergeable_unmerged(merges, unmerged)


def _unmergeable_unmerged(merges: dict[tuple[int, int], int], unmerged: list[int]
                          ) -> tuple[dict[tuple[int, int], int], list[int]]:
    """``recover_merges``' result with the token of :data:`UNMERGEABLE_ID` among the unmerged
    ones: the merge loop, allowed ids below it, may leave it in two parts, but no merge makes it."""
    last = next(reversed(merges.items()), None)  # merges are in id order: that id can only be last
    if last is None or last[1] != UNMERGEABLE_ID:
        return merges, unmerged
    del merges[last[0]]
    return merges, sorted([*unmerged, UNMERGEABLE_ID])


def _renumbering(merges: Mapping[tuple[int, int], int], byte_ids: Sequence[int], token_ids: Sequence[int]
                 ) -> list[int] | None:
    """Every id in increasing order, when the C kernel cannot take the ids as they are (one above
    its int32 range, or few ids spread so thinly that its tables indexed by id would be mostly
    empty); None when it can."""
    top = max(max(byte_ids), max(token_ids, default=-1), max(merges.values(), default=-1))
    if top <= _KERNEL_MAX_ID and (top < _KERNEL_DENSE_IDS or top < 8 * (len(token_ids) + len(merges) + 256)):
        return None
    return sorted({*byte_ids, *token_ids, *merges.values(), *(idx for pair in merges for idx in pair)})


def encode_split_text(encoder: ChunkEncoder, chunking: Chunking, text: str, num_threads: int = 1) -> list[int]:
    """``Tokenizer.encode_ordinary`` past its one C call: ``text`` cut by ``chunking`` (its C
    scanner, or its splitter) and encoded chunk by chunk. A lone surrogate follows tiktoken's
    rule: pair what pairs, replace the rest by U+FFFD."""
    try:
        return _encode_split_text(encoder, chunking, text, num_threads)
    except UnicodeEncodeError:
        return _encode_split_text(encoder, chunking, text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"),
                                  num_threads)


def _encode_split_text(encoder: ChunkEncoder, chunking: Chunking, text: str, num_threads: int) -> list[int]:
    if chunking.scanner is not None:
        ids = encoder.encode_text(text, chunking.scanner, num_threads)
        if ids is not None:
            return ids
    split = chunking.split
    if split is None:
        return encoder.encode_bytes(text.encode("utf-8"))
    if chunking.emits_bytes:
        encode_bytes = encoder.encode_bytes
        return [idx for chunk in split(text) for idx in encode_bytes(chunk)]
    return encoder.encode_chunks(split(text))
