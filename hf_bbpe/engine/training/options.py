"""How training runs: one object for the keywords of ``Tokenizer.train``, ``train_from_counts``,
``count_chunks`` and ``extend``, and what training needs of a tokenizer.

The public methods keep their keywords (minbpe's and ``tokenizers``' spellings); each builds a
:class:`TrainingOptions` once from its call, and every step of ``api.py`` reads what it needs from
it. A new training option is a field here and a keyword on the public methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

from ..chunking.chunking import Chunking
from ..encoding.encoder import ChunkEncoder
from .superwords import SuperwordConfig


@dataclass(frozen=True)
class TrainingOptions:
    """The training keywords, as the public methods take them (see ``Tokenizer.train``).

    ``superwords`` is kept as given (a :class:`~superwords.SuperwordConfig`, True, or None) and
    checked where training starts, so that errors come in the order they always have."""

    verbose: bool = False
    tie_break: str = "smallest_pair"
    min_frequency: int = 1
    num_workers: int | None = None
    progress: bool | None = None
    text_column: str = "text"
    docs: str = "line"
    max_memory: int | str | None = None
    superwords: SuperwordConfig | bool | None = None

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> TrainingOptions:
        """The options among a call's arguments (its ``locals()``): every field it names; other
        names (the tokenizer, the corpus, the vocabulary size) are not options."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls) if field.name in arguments})


class Trainable(Protocol):
    """What training needs of a tokenizer (``engine/tokenizer.py``'s ``Tokenizer`` is one): its
    chunking, its tokens, its encoder, and the two steps that set its merges."""

    chunking: Chunking

    @classmethod
    def from_merges(cls, merges: Mapping[tuple[int, int], int], **options: Any) -> Trainable: ...

    @property
    def normalizer(self) -> Any: ...

    @property
    def pre_tokenizer(self) -> Any: ...

    @property
    def plain_pattern(self) -> str | None: ...

    @property
    def merges(self) -> dict[tuple[int, int], int]: ...

    @property
    def vocab(self) -> dict[int, bytes]: ...

    @property
    def byte_ids(self) -> list[int]: ...

    @property
    def unmerged_tokens(self) -> dict[int, bytes]: ...

    @property
    def mode(self) -> str: ...

    @property
    def special_tokens(self) -> dict[str, int]: ...

    normalized_special_tokens: frozenset[str]
    roles: Any

    @property
    def encoder(self) -> ChunkEncoder: ...

    def reset_to_bytes(self) -> None: ...

    def adopt_merges(self, merges: dict[tuple[int, int], int]) -> None: ...
