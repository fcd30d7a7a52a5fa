"""A tokenizer's chunking: how ordinary text becomes the chunks BPE encodes one by one.

:class:`Chunking` is the one object that owns it: an optional normalizer, then a pre-tokenizer
pipeline (a plain split pattern is the pipeline ``pattern=`` makes), and what follows from them:
the splitter the engine's hot path calls, the C scanner that splits and encodes whole texts, and
what training counts with. Every caller (encoding, training, counts files, SuperBPE's stage 2)
asks this object; nothing works the pattern out again.

A Chunking never changes once made (a tokenizer given other chunking gets a new one), and it
pickles as its normalizer and pipeline, for worker processes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from .normalizers import Normalizer, resolve_normalizer
from .patterns import chunk_splitter, compile_pattern, isolated_pattern_name, isolated_scanner_name, \
    native_isolated_splitter, native_scanner, pattern_name, regex_splitter, resolve_pattern
from .pre_tokenizers import PreTokenizer, Span, Split, isolated_split, pattern_pre_tokenizer, resolve_pre_tokenizer


class Chunking:
    """Text to chunks: normalize, then pre-tokenize (what ``encode``, training and ``extend`` all
    do to ordinary text). Call it on a text for its chunks."""

    normalizer: Normalizer | None
    pre_tokenizer: PreTokenizer | None
    native: bool
    """Whether the C scanners split (False: the regex module)."""
    plain_pattern: str | None
    """The pattern whose matches are exactly the pipeline's chunks (``""``: no split), else None."""
    split_pattern: str | None
    """The regex of a pipeline that is one regex ``Split`` (``""``: no split), else None."""
    emits_bytes: bool
    """Whether the chunks are bytes (a pipeline that splits after its ``ByteLevel`` step)."""
    fast_split: Any
    """The pre-tokenizer alone as a function (None: no split), for the engine's hot path."""
    split: Any
    """What the engine splits ordinary text with: :attr:`fast_split` without a normalizer (the C
    scanner's splitter, say), else this object (normalize, then split)."""
    scanner: object | None
    """The C scanner that cuts text as this does (a capsule, see ``patterns.native_scanner``),
    with which the C kernel splits and encodes whole texts: when there is no normalizer and the
    pipeline is one split pattern that a scanner knows (a plain pattern, or an isolated Split:
    SuperBPE's stage 2); else None."""

    def __init__(self, normalizer: Normalizer | str | Mapping | None, pre_tokenizer: PreTokenizer | None, *,
                 native: bool = True) -> None:
        """``native=False``: no C scanner (split with the regex module), as where the C module is
        not built (remote code); the chunks are the same."""
        normalizer = resolve_normalizer(normalizer)
        pipeline = None if pre_tokenizer is None else pre_tokenizer.as_sequence()
        plain = "" if pipeline is None else pipeline.plain_pattern
        split_pattern = "" if pipeline is None else pipeline.split_pattern
        if plain == "":
            fast_split = None
        elif plain is not None:
            fast_split = chunk_splitter(plain) if native else regex_splitter(plain)
        elif split_pattern is not None:
            fast_split = (native_isolated_splitter(split_pattern) if native else None) or \
                functools.partial(isolated_split, compile_pattern(split_pattern))
        else:
            fast_split = pipeline.pre_tokenize
        scanner = None
        if not native:
            pass
        elif normalizer is None and plain:
            scanner = native_scanner(plain)
        elif normalizer is None and plain is None and split_pattern:
            scanner = native_scanner(split_pattern, isolated=True)
        fields = {
            "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "native": native, "_pipeline": pipeline,
            "plain_pattern": plain, "split_pattern": split_pattern,
            "emits_bytes": pipeline is not None and pipeline.emits_bytes,
            "fast_split": fast_split, "split": fast_split if normalizer is None else self, "scanner": scanner,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Chunking does not change (setting {name!r}): make a new one")

    @classmethod
    def from_options(cls, pattern: str | None = None, pre_tokenizer: PreTokenizer | Mapping | None = None,
                     normalizer: Normalizer | str | Mapping | None = None) -> Chunking:
        """From a tokenizer's constructor options: a split ``pattern`` (a registered name or a
        regex; ``""``/None: no split) or a ``pre_tokenizer`` pipeline (an object or its JSON
        form), and a ``normalizer``. ValueError for bad ones, or for both a pattern and a pipeline."""
        if pattern and pre_tokenizer is not None:
            raise ValueError("pass a split pattern or a pre_tokenizer pipeline, not both")
        if pre_tokenizer is not None:
            pre = resolve_pre_tokenizer(pre_tokenizer)
        else:
            pre = pattern_pre_tokenizer(resolve_pattern(pattern or None))
        return cls(resolve_normalizer(normalizer), pre)

    @classmethod
    def isolated(cls, pattern: str, normalizer: Normalizer | None = None) -> Chunking:
        """``Split(pattern, "isolated")`` (the matches and the text between them), then
        ``normalizer``: SuperBPE's stage 2. A pattern the registry knows that way is given as
        ``pattern=`` (its C scanner cuts it), any other as the pipeline."""
        if isolated_pattern_name(pattern) is not None or pattern_name(pattern) is not None:
            return cls.from_options(pattern, None, normalizer)
        return cls(normalizer, Split(pattern, "isolated"))

    def __call__(self, text: str) -> list[str] | list[bytes]:
        if self.normalizer is not None:
            text = self.normalizer.normalize(text)
        if self.fast_split is None:
            return [text] if text else []
        return self.fast_split(text)

    def with_spans(self, text: str) -> list[tuple[str | bytes, list[Span]]]:
        """Each chunk of ``text`` with, per character (per byte for bytes chunks), the span of
        ``text`` it comes from, through normalization and pre-tokenization, as ``tokenizers``
        aligns them. A token made of chunk characters ``i:j`` covers the original text from
        the smallest start to the largest end of their spans."""
        if self.normalizer is not None:
            normalized, alignment = self.normalizer.normalize_with_alignment(text)
        else:
            normalized, alignment = text, None
        if self._pipeline is None:
            pieces = [(normalized, range(len(normalized)))] if normalized else []
        else:
            pieces = self._pipeline.pre_tokenize_with_positions(normalized)
        out = []
        for piece, positions in pieces:
            if alignment is None:
                spans = [(p, p + 1) for p in positions]
            else:
                spans = [alignment[p] for p in positions]
            out.append((piece, spans))
        return out

    @property
    def is_plain(self) -> bool:
        """True if text is cut by one split pattern (or not at all) with no normalizer: what
        tiktoken, minbpe's formats and a counts file can hold."""
        return self.normalizer is None and self.plain_pattern is not None

    @property
    def builtin_name(self) -> str | None:
        """The registry's name of the plain pattern when it is a built-in one (or another spelling
        of one, see patterns.py: such a pattern matches every character), else None."""
        return isolated_scanner_name(self.plain_pattern) if self.plain_pattern else None

    @property
    def counting_spec(self) -> str | None | Chunking:
        """What the Python chunk counter (``counting_reference.count_chunks``) takes: the plain
        pattern (None: no split) when there is one, else this whole normalize-and-split callable."""
        if self.is_plain:
            return self.plain_pattern or None
        return self

    @property
    def native_split(self) -> tuple[str, bool] | None:
        """``(pattern, isolated)`` when the chunking is one split pattern and no normalizer, for
        the C counter: a plain pattern's matches, or ``Split(pattern, "isolated")`` (SuperBPE's
        stage 2); else None."""
        if self.normalizer is not None:
            return None
        if self.plain_pattern:
            return self.plain_pattern, False
        if self.plain_pattern is None and self.split_pattern:
            return self.split_pattern, True
        return None

    def counts_file_pattern(self, source: str) -> str | None:
        """The split pattern a counts file of these chunks names (the plain pattern, None for no
        split). A normalizer or a pipeline has none: ValueError naming ``source`` (the file)."""
        if not self.is_plain:
            raise ValueError(f"{source}: a counts file holds the chunks of a split pattern; this tokenizer normalizes "
                             "or pre-tokenizes its text (count with a plain RegexTokenizer, or use train_from_counts "
                             "with a mapping)")
        return self.plain_pattern or None

    def __getstate__(self) -> dict[str, Any]:
        return {"normalizer": self.normalizer, "pre_tokenizer": self.pre_tokenizer, "native": self.native}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["normalizer"], state["pre_tokenizer"], native=state.get("native", True))
