"""minbpe's tokenizer classes, with tiktoken's encode API on top.

A tokenizer is fully described by three things: the split ``pattern``, the ordered ``merges``
``{(left_id, right_id): new_id}``, and the ids of the 256 single bytes (``byte_ids``, the
identity unless imported from GPT-2 or cl100k), plus ``special_tokens``. Everything else
(``vocab``, the chunk encoder, the special-token regex) is derived and rebuilt when those change.
"""

from __future__ import annotations

import importlib
import operator
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .chunk_counting import count_chunks
from .chunk_encoder import ChunkEncoder
from .model_file import (
    ModelFileContents,
    ModelFileError,
    model_file_path,
    read_model_file,
    write_model_file,
    write_vocab_file,
)
from .patterns import chunk_splitter, resolve_pattern
from .progress import progress_bar
from .special_tokens import (
    AllowedSpecial,
    DisallowedSpecial,
    DisallowedSpecialToken,
    checked_special_tokens,
    resolve_special_policy,
    special_token_regex,
)
from .token_ids import single_token_id, token_id_list
from .token_offsets import token_char_spans
from .trainer import train_merges
from .worker_pool import available_cpus

Merges = dict[tuple[int, int], int]


class Tokenizer:
    """Byte-level BPE: train, encode, decode, save and load.

    ``pattern`` is a registered name ("gpt2", "gpt4", "o200k") or a regex; ``""`` or ``None``
    means no split (the whole text is one sequence, minbpe's BasicTokenizer).
    """

    def __init__(self, pattern: str | None = None) -> None:
        self.pattern: str = resolve_pattern(pattern) or ""
        self._merges: Merges = {}
        self._byte_ids: list[int] = list(range(256))
        self._special_tokens: dict[str, int] = {}
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
        allow_large_ids: bool = False,
    ) -> Tokenizer:
        """Build a tokenizer from merges in order (for importers and converters).

        ``byte_ids[b]`` is the id of byte ``b`` (default: ``b``). Raises ValueError if a merge
        names an id that is neither a byte nor an earlier merge, or if ids collide.
        ``check=False`` skips those merge checks, for merges valid by construction (recovered
        from ranks: each names two lower ranks); the merges must then be a dict of int pairs to
        ints in increasing order. Special tokens are checked as :meth:`register_special_tokens`
        checks them.

        ``Tokenizer.from_merges`` gives a RegexTokenizer, or a BasicTokenizer when ``pattern``
        is empty; called on a subclass, it gives that class.
        """
        tok = cls._blank(pattern)
        byte_ids = list(range(256)) if byte_ids is None else [int(i) for i in byte_ids]
        if len(byte_ids) != 256 or len(set(byte_ids)) != 256:
            raise ValueError("byte_ids must give 256 distinct ids, one per byte value")
        tok._byte_ids = byte_ids
        tok._merges = _checked_merges(merges, byte_ids) if check else dict(merges)
        tok._special_tokens = tok._checked_specials(special_tokens or {}, allow_large_ids=allow_large_ids)
        tok._rebuild()  # once: tables for 100k+ merges take a while to build
        return tok

    @classmethod
    def _blank(cls, pattern: str | None) -> Tokenizer:
        """An empty tokenizer of this class (Regex or Basic by ``pattern`` for the base class)."""
        if cls is Tokenizer:
            return RegexTokenizer(pattern) if pattern else BasicTokenizer()
        if issubclass(cls, BasicTokenizer):
            if pattern:
                raise ValueError(f"{cls.__name__} has no split pattern, got {pattern!r}")
            return cls()
        return cls(pattern or None)

    @property
    def merges(self) -> Merges:
        """``{(left_id, right_id): new_id}`` in merge order. Assign a new dict to change it."""
        return self._merges

    @merges.setter
    def merges(self, merges: Mapping[tuple[int, int], int]) -> None:
        self._merges = _checked_merges(merges, self._byte_ids)
        self._rebuild()

    @property
    def byte_ids(self) -> list[int]:
        """``byte_ids[b]`` is the token id of the single byte ``b``."""
        return self._byte_ids

    @property
    def special_tokens(self) -> dict[str, int]:
        """``{special token string: id}``. Use :meth:`register_special_tokens` to add."""
        return self._special_tokens

    @special_tokens.setter
    def special_tokens(self, tokens: Mapping[str, int]) -> None:
        self._special_tokens = self._checked_specials(tokens, replace=True)  # a bad value changes nothing
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
        return checked_special_tokens(
            special_tokens,
            existing={} if replace else self._special_tokens,
            normal_ids=set(self._byte_ids) | set(self._merges.values()),
            allow_large_ids=allow_large_ids,
        )

    def _rebuild(self) -> None:
        self._vocab: dict[int, bytes] | None = None  # built on first use: encoding never needs it
        self._encoder = ChunkEncoder(self._merges, self._byte_ids)
        self._inverse_special = {idx: token for token, idx in self._special_tokens.items()}
        self._special_regex_cache: dict[frozenset[str], object] = {}
        self._policy_cache: dict[tuple, tuple[frozenset[str], frozenset[str]]] = {}

    @property
    def vocab(self) -> dict[int, bytes]:
        """``{id: token bytes}`` for every token, special tokens included (treat it as read-only)."""
        if self._vocab is None:
            vocab = {idx: bytes([b]) for b, idx in enumerate(self._byte_ids)}
            for (a, b), new in self._merges.items():
                vocab[new] = vocab[a] + vocab[b]
            for token, idx in self._special_tokens.items():
                vocab[idx] = token.encode("utf-8")
            self._vocab = vocab
        return self._vocab

    @property
    def n_vocab(self) -> int:
        """One more than the largest token id (tiktoken's definition)."""
        last_merge = next(reversed(self._merges.values()), -1)  # merge ids increase in merge order
        return max(max(self._byte_ids), last_merge, max(self._special_tokens.values(), default=-1)) + 1

    def mergeable_ranks(self) -> dict[bytes, int]:
        """``{token bytes: id}`` for every non-special token, ready for ``tiktoken.Encoding``."""
        specials = set(self._special_tokens.values())
        return {token: idx for idx, token in sorted(self.vocab.items()) if idx not in specials}

    # -------------------------------------------------------------- training

    def train(
        self,
        text: str | Iterable[str],
        vocab_size: int,
        verbose: bool = False,
        *,
        tie_break: str = "smallest_pair",
        min_frequency: int = 1,
        num_workers: int | None = None,
        progress: bool | None = None,
        text_column: str = "text",
    ) -> None:
        """Learn ``vocab_size - 256`` merges from a str or an iterable of documents.

        Documents (a file object yields lines) are split with the pattern one by one, in
        parallel processes; see :func:`train_from_counts` for the rest. A ``ray.data.Dataset``
        is counted on its Ray cluster (column ``text_column``; see ``hf_bbpe.distributed``).
        """
        _check_vocab_size(vocab_size)
        counts = self._chunk_counts(text, num_workers, progress, tie_break, text_column)
        self.train_from_counts(
            counts, vocab_size, verbose, tie_break=tie_break, min_frequency=min_frequency, progress=progress
        )

    def train_from_counts(
        self,
        counts: Mapping[str | bytes, int],
        vocab_size: int,
        verbose: bool = False,
        *,
        tie_break: str = "smallest_pair",
        min_frequency: int = 1,
        progress: bool | None = None,
    ) -> None:
        """Learn merges from precomputed chunk counts ``{chunk: count}``.

        Count the chunks with any engine (e.g. a map-reduce over ``pattern``), then call this.
        For ``tie_break="first_occurrence"`` the mapping must be in order of first appearance.
        Special tokens already registered keep their ids; merges skip them.
        """
        _check_vocab_size(vocab_size)
        words = []
        weights = []
        for chunk, count in counts.items():
            if isinstance(chunk, str):
                data = chunk.encode("utf-8")
            elif isinstance(chunk, (bytes, bytearray)):
                data = bytes(chunk)
            else:
                raise TypeError(f"chunk counts must have str or bytes keys, got {chunk!r}")
            if count > 0 and data:
                words.append(data)
                weights.append(int(count))
        self._byte_ids = list(range(256))
        self._merges = {}
        self._rebuild()
        self._merges = self._learn(words, weights, vocab_size - 256, tie_break, min_frequency, verbose, progress)
        self._rebuild()

    # The keywords repeat train's on purpose: extending is training that continues from these merges.
    def extend(
        self,
        text: str | Iterable[str],
        num_new_merges: int,
        verbose: bool = False,
        *,
        tie_break: str = "smallest_pair",
        min_frequency: int = 1,
        num_workers: int | None = None,
        progress: bool | None = None,
        text_column: str = "text",
    ) -> Tokenizer:
        """A new tokenizer with up to ``num_new_merges`` merges learned on top of this one's.

        The new corpus is counted with this tokenizer's pattern and each chunk is segmented with
        the existing merges; BPE then continues on those sequences with the same merge loop.
        Every old id keeps its bytes, every old merge is kept in order, special tokens keep their
        ids, new ids start above the highest normal id and skip ids that are taken, and no new
        token repeats the bytes of an existing one. Because new merge ids are all higher than the
        old ones, text in which no new merge applies encodes exactly as before.
        """
        counts = self._chunk_counts(text, num_workers, progress, tie_break, text_column)
        words: list[list[int]] = []
        weights: list[int] = []
        for chunk, count in counts.items():
            ids = self.encode_single_piece(chunk)
            if len(ids) >= 2:
                words.append(ids)
                weights.append(count)
        extended = type(self).from_merges(
            self._merges, pattern=self.pattern, special_tokens=self._special_tokens, byte_ids=self._byte_ids,
            allow_large_ids=True,  # the ids were checked when they were registered here
        )
        extended._merges = extended._learn(
            words, weights, num_new_merges, tie_break, min_frequency, verbose, progress, unique_bytes=True
        )
        extended._rebuild()
        return extended

    def _chunk_counts(
        self, text: Any, num_workers: int | None, progress: bool | None, tie_break: str, text_column: str
    ) -> dict[str, int]:
        """The chunk counts of training text: in this machine's processes, or on Ray for a Ray Dataset."""
        ray_data = sys.modules.get("ray.data")  # a Ray Dataset can only exist once ray.data is loaded
        if ray_data is None or not isinstance(text, ray_data.Dataset):
            return count_chunks(text, self.pattern or None, num_workers=num_workers, progress=progress)
        if tie_break == "first_occurrence":
            raise ValueError(
                "tie_break='first_occurrence' needs the order of the documents, which a Ray Dataset does not "
                "define: count with hf_bbpe.distributed.count_chunks(ds, tok, order_column=...) and call "
                "train_from_counts"
            )
        distributed = importlib.import_module(".distributed", __package__)
        return distributed.count_chunks(text, self.pattern or None, text_column=text_column)

    def _learn(
        self,
        words: list[bytes] | list[list[int]],
        weights: list[int],
        num_merges: int,
        tie_break: str,
        min_frequency: int,
        verbose: bool,
        progress: bool | None,
        unique_bytes: bool = False,
    ) -> Merges:
        """Run the merge loop on words of current token ids; new ids go above the current ones.

        With ``unique_bytes``, a pair whose bytes already form a token is never merged, so no
        two tokens share the same bytes.
        """
        vocab = dict(self.vocab)
        bar = progress_bar(desc="merging", total=num_merges, unit="merge", enabled=progress)
        merge_number = 0

        def on_merge(a: int, b: int, new_id: int, count: int) -> None:
            nonlocal merge_number
            merge_number += 1
            vocab[new_id] = vocab[a] + vocab[b]
            if verbose:
                print(f"merge {merge_number}/{num_merges}: {(a, b)} -> {new_id} ({vocab[new_id]}) had {count} occurrences")
            bar.update(1)

        known_bytes = set(vocab.values()) if unique_bytes else None

        def allow_pair(a: int, b: int) -> bool:
            merged = vocab[a] + vocab[b]
            if merged in known_bytes:
                return False
            known_bytes.add(merged)
            return True

        learned = train_merges(
            words,
            weights,
            num_merges,
            first_id=max([*self._byte_ids, *self._merges.values()]) + 1,
            taken_ids=self.vocab.keys(),
            tie_break=tie_break,
            min_frequency=min_frequency,
            on_merge=on_merge if verbose or not bar.disable or unique_bytes else None,
            allow_pair=allow_pair if unique_bytes else None,
        )
        bar.close()
        merges = dict(self._merges)
        merges.update(learned)
        return merges

    # -------------------------------------------------------------- encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` with no special-token handling."""
        try:
            return self._encode_ordinary(text)
        except UnicodeEncodeError:
            # tiktoken's rule for lone surrogates: pair what pairs, replace the rest by U+FFFD
            return self._encode_ordinary(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))

    def encode_single_piece(self, piece: str | bytes) -> list[int]:
        """Apply the merges to ``piece`` as one chunk: no split pattern, no special tokens.

        This is how the tokenizer spells a byte string it was not trained on as one unit, e.g.
        a new token's bytes in terms of an older vocabulary (sub-token initialisation).
        """
        data = piece.encode("utf-8") if isinstance(piece, str) else bytes(piece)
        return self._encoder.encode_bytes(data)

    def _encode_ordinary(self, text: str) -> list[int]:
        if not self.pattern:
            return self._encoder.encode_bytes(text.encode("utf-8"))
        return self._encoder.encode_chunks(chunk_splitter(self.pattern)(text))

    def encode(
        self,
        text: str,
        allowed_special: AllowedSpecial = "none_raise",
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[int]:
        """Encode ``text``; special tokens follow tiktoken's rules (see special_tokens.py).

        By default text that spells a special token raises :class:`DisallowedSpecialToken` (a
        ValueError whose ``.token`` names it); pass
        ``allowed_special="all"`` to encode it as the special id, or ``disallowed_special=()``
        to encode it as ordinary text.
        """
        allowed, disallowed = self._special_policy(allowed_special, disallowed_special)
        if disallowed:
            match = self._special_regex(disallowed).search(text)
            if match:
                raise DisallowedSpecialToken(match.group())
        if not allowed:
            return self.encode_ordinary(text)
        ids: list[int] = []
        start = 0
        for match in self._special_regex(allowed).finditer(text):
            if match.start() > start:
                ids += self.encode_ordinary(text[start : match.start()])
            ids.append(self._special_tokens[match.group()])
            start = match.end()
        if start < len(text):
            ids += self.encode_ordinary(text[start:])
        return ids

    def encode_with_offsets(
        self,
        text: str,
        allowed_special: AllowedSpecial = "none_raise",
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """``encode(text, ...)`` and each token's ``(start, end)`` character offsets in ``text``.

        A token holding part of a multi-byte character spans that whole character, as the
        ``tokenizers`` library reports it (see token_offsets.py). ``allowed_special="none"``
        gives ``encode_ordinary``'s ids.
        """
        ids = self.encode(text, allowed_special, disallowed_special)
        vocab = self.vocab
        return ids, token_char_spans(text, [len(vocab[idx]) for idx in ids])

    def _special_policy(
        self, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> tuple[frozenset[str], frozenset[str]]:
        try:
            key = (allowed_special, disallowed_special)
            return self._policy_cache[key]
        except TypeError:  # an unhashable set: resolve every time
            return resolve_special_policy(self._special_tokens, allowed_special, disallowed_special)
        except KeyError:
            policy = self._policy_cache[key] = resolve_special_policy(
                self._special_tokens, allowed_special, disallowed_special
            )
            return policy

    def _special_regex(self, tokens: frozenset[str]):
        found = self._special_regex_cache.get(tokens)
        if found is None:
            found = self._special_regex_cache[tokens] = special_token_regex(tokens)
        return found

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        num_workers: int | None = None,
        allowed_special: AllowedSpecial = "none_raise",
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[list[int]]:
        """Encode many texts, in order; large batches use several processes."""
        from .batch_encoding import encode_batch

        return encode_batch(self, texts, num_workers=num_workers or available_cpus(),
                            allowed_special=allowed_special, disallowed_special=disallowed_special)

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
        """Write ``<prefix>.model`` (minbpe v1, loadable by minbpe) and ``<prefix>.vocab``."""
        prefix = Path(file_prefix)
        contents = ModelFileContents(self.pattern, dict(self._special_tokens), dict(self._merges), list(self._byte_ids))
        write_model_file(prefix.with_name(prefix.name + ".model"), contents)
        write_vocab_file(prefix.with_name(prefix.name + ".vocab"), self.vocab, self._merges)

    def load(self, model_file: str | os.PathLike) -> None:
        """Read a ``.model`` file written by minbpe or by :meth:`save` into this tokenizer.

        ``model_file`` is the file, or the prefix given to :meth:`save` (``"tok"`` reads
        ``tok.model`` if there is no file ``tok``).
        """
        model_file = model_file_path(model_file)
        contents = read_model_file(model_file)
        try:
            merges = _checked_merges(contents.merges, contents.byte_ids)
            specials = checked_special_tokens(contents.special_tokens, existing={},
                                              normal_ids=set(contents.byte_ids) | set(merges.values()))
        except ValueError as exc:
            raise ModelFileError(f"{model_file}: {exc}") from None
        self.pattern = contents.pattern
        self._byte_ids = contents.byte_ids
        self._merges = merges
        self._special_tokens = specials
        self._rebuild()

    @classmethod
    def from_file(cls, model_file: str | os.PathLike) -> Tokenizer:
        """A new tokenizer read from a ``.model`` file or save prefix (for ``Tokenizer``: Regex or
        Basic, by its pattern; called on a subclass, that class)."""
        tok = cls._blank(read_model_file(model_file).pattern)
        tok.load(model_file)
        return tok

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_vocab={self.n_vocab}, merges={len(self._merges)}, "
            f"special_tokens={len(self._special_tokens)})"
        )


class BasicTokenizer(Tokenizer):
    """Byte-level BPE on the raw byte sequence, with no split pattern (minbpe's BasicTokenizer)."""

    def __init__(self) -> None:
        super().__init__(None)


class RegexTokenizer(Tokenizer):
    """Byte-level BPE within the chunks of a split pattern; GPT-4's by default, as in minbpe."""

    def __init__(self, pattern: str | None = None) -> None:
        super().__init__(pattern or "gpt4")


def _checked_merges(merges: Mapping[tuple[int, int], int], byte_ids: Sequence[int]) -> Merges:
    """``merges`` as a dict of ints, after checking that each one builds on known ids with a new,
    increasing id; a ValueError names the first merge at fault.

    The check runs as a few bulk passes (importers hand over 200k merges); only when one fails
    does the merge-by-merge loop run, to name the culprit.
    """
    try:
        pairs = [(int(a), int(b)) for a, b in merges]
        news = [int(new) for new in merges.values()]
    except (TypeError, ValueError):
        return _checked_merges_one_by_one(merges, byte_ids)
    known = set(byte_ids)
    made = set(news)
    lefts = [a for a, _ in pairs]
    rights = [b for _, b in pairs]
    ok = all(map(operator.lt, news, news[1:])) and known.isdisjoint(made)
    if ok and news and max(known) < news[0]:  # bytes below every merge (all real vocabularies)
        ok = (known.union(made).issuperset(lefts) and known.union(made).issuperset(rights)
              and all(map(operator.lt, lefts, news)) and all(map(operator.lt, rights, news)))
    elif ok:
        ok = all((a in known or (a < new and a in made)) and (b in known or (b < new and b in made))
                 for a, b, new in zip(lefts, rights, news))
    if ok:
        return dict(zip(pairs, news))
    return _checked_merges_one_by_one(merges, byte_ids)


def _checked_merges_one_by_one(merges: Mapping[tuple[int, int], int], byte_ids: Sequence[int]) -> Merges:
    known = set(byte_ids)
    last = -1
    checked: Merges = {}
    for (a, b), new in merges.items():
        a, b, new = int(a), int(b), int(new)
        for side in (a, b):
            if side not in known:
                raise ValueError(f"merge ({a}, {b}) -> {new} names token {side}, which is not defined before it")
        if new in known:
            raise ValueError(f"merge ({a}, {b}) -> {new} reuses id {new}")
        if new <= last:
            raise ValueError(
                f"merge ({a}, {b}) -> {new} comes after a merge that made {last}: merge ids must "
                "increase in merge order, because the encoder applies the lowest id first"
            )
        checked[(a, b)] = new
        known.add(new)
        last = new
    return checked


def _check_vocab_size(vocab_size: int) -> None:
    if not isinstance(vocab_size, int) or vocab_size < 256:
        raise ValueError(f"vocab_size must be an int >= 256 (the 256 byte tokens), got {vocab_size!r}")
