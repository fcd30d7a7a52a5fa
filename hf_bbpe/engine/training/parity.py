"""Parity-aware training's settings: :class:`ParityConfig`, what ``Tokenizer.train(languages=...,
parity=...)`` takes, and its checks (one line each, naming the setting).

The algorithm, and what it counts, is parity_reference.py's module doc; api.py's
``train_tokenizer_by_language`` counts each language and runs it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

VARIANTS = ("base", "window")


@dataclass(frozen=True)
class ParityConfig:
    """How parity-aware BPE balances languages (``tokenizers``' ``ParityBpeTrainer`` options).

    Give exactly one of ``dev`` (a parallel dev set: ``{language: texts}``, each any input
    ``train`` takes; the language with the most dev tokens is merged for next) or ``ratio``
    (``{language: float}``: the language with the lowest training compression rate divided by
    its ratio is merged for next; only the ratios' proportions matter)."""

    variant: str = "base"
    """``"base"``: always the worst-compressed language; ``"window"``: pass over a language
    chosen more than ``alpha / languages`` of the last ``window_size`` merges."""
    dev: Mapping[str, Any] | None = None
    """The dev texts of each language (the same content in each, ideally)."""
    ratio: Mapping[str, float] | None = None
    """Target compression rate per language (e.g. its bytes per character of parallel text)."""
    global_merges: int = 0
    """This many plain-BPE merges first (counts summed over languages), then parity."""
    window_size: int = 100
    """The window variant's window, in merges."""
    alpha: float = 2.0
    """The window variant's allowance: a language's share of the window may reach ``alpha / languages``."""

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"ParityConfig variant must be 'base' or 'window', got {self.variant!r}")
        if (self.dev is None) == (self.ratio is None):
            raise ValueError("ParityConfig needs dev= (a dev set per language) or ratio= (a target per language): "
                             "exactly one of them" + (", not both" if self.dev is not None else ""))
        for name in ("global_merges", "window_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "window_size" else 0):
                raise ValueError(f"ParityConfig {name} must be an int >= {int(name == 'window_size')}, got {value!r}")
        if not isinstance(self.alpha, (int, float)) or not math.isfinite(self.alpha) or self.alpha <= 0:
            raise ValueError(f"ParityConfig alpha must be a positive finite number, got {self.alpha!r}")
        if self.dev is not None and not isinstance(self.dev, Mapping):
            raise TypeError(f"ParityConfig dev must map each language to its dev texts, got {type(self.dev).__name__}")
        if self.ratio is not None:
            if not isinstance(self.ratio, Mapping):
                raise TypeError(f"ParityConfig ratio must map each language to a float, got {type(self.ratio).__name__}")
            for language, value in self.ratio.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                    raise ValueError(f"ParityConfig ratio[{language!r}] must be a positive finite number, got {value!r}")

    def check_languages(self, languages: Sequence[str]) -> None:
        """Refuse a dev set or ratios whose languages are not exactly the training languages."""
        given = self.dev if self.dev is not None else self.ratio
        what = "dev" if self.dev is not None else "ratio"
        unknown = [name for name in given if name not in languages]
        if unknown:
            raise ValueError(f"ParityConfig {what} names {unknown[0]!r}, which is not a training language "
                             f"(languages: {', '.join(map(str, languages))})")
        missing = [name for name in languages if name not in given]
        if missing:
            raise ValueError(f"ParityConfig {what} has nothing for language {missing[0]!r}: give every training "
                             "language one")


def check_language_corpora(languages: Any) -> list[str]:
    """The language names of ``Tokenizer.train(languages=...)`` (a mapping of two or more)."""
    if not isinstance(languages, Mapping):
        raise TypeError(f"languages must map each language's name to its corpus, got {type(languages).__name__}")
    if len(languages) < 2:
        raise ValueError(f"parity training needs two or more languages, got {len(languages)}")
    for name in languages:
        if not isinstance(name, str) or not name:
            raise TypeError(f"language names must be non-empty strs, got {name!r}")
    return list(languages)
