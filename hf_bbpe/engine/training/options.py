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
from .parity import ParityConfig
from .superwords import SuperwordConfig


@dataclass(frozen=True)
class TrainingOptions:
    """The training keywords of ``Tokenizer.train``, ``train_from_counts``, ``count_chunks`` and
    ``extend``, each documented here once (a method takes those that apply to it).

    ``superwords`` is kept as given and checked where training starts, so that errors come in the
    order they always have."""

    verbose: bool = False
    """Print each merge as it is learned."""
    tie_break: str = "smallest_pair"
    """Which of the pairs with the highest count merges first: ``"smallest_pair"`` (minbpe),
    ``"first_occurrence"`` (the pair seen first in the corpus: the counts must be in order of first
    appearance) or ``"huggingface"`` (``tokenizers``' BpeTrainer); see merge_loop.py."""
    min_frequency: int = 1
    """Stop when no pair occurs this many times (with a warning)."""
    num_workers: int | None = None
    """With a pattern the C scanner knows (and no normalizer or pipeline), chunks are counted by
    the C kernel on this many threads (default: the CPUs available), files read in blocks by
    those threads; otherwise documents are split one by one in this many processes."""
    progress: bool | None = None
    """Show progress bars (None: when the output is a terminal; see progress.py)."""
    text_column: str = "text"
    """The column of a ``.jsonl`` or ``.parquet`` file's records, of a Hugging Face
    ``datasets.Dataset`` or streaming ``IterableDataset`` (read in batches), or of a
    ``ray.data.Dataset`` (counted on its Ray cluster, see ``hf_bbpe.distributed``) that holds
    the documents."""
    docs: str = "line"
    """What a document of a text file is: each line, as ``open(f)`` yields it (with ``\\r`` kept as
    it is), ``"paragraph"`` (lines up to a run of blank lines, as :func:`hf_bbpe.paragraphs` cuts
    them), or ``"file"`` (the whole file). ``text_files.DOCS_RULE`` states the rule once, with the
    command line's defaults, which differ by job: ``hf-bbpe train`` reads paragraphs,
    ``encode-corpus`` whole files."""
    max_memory: int | str | None = None
    """Bytes, or e.g. ``"4G"``: bounds the C counter's memory. Its tables spill to disk in hash
    partitions, merged back exactly into a counts file that is mapped, not read into memory (the
    merge loop still holds every distinct chunk)."""
    superwords: SuperwordConfig | bool | None = None
    """A :class:`~superwords.SuperwordConfig`, or True for its defaults: SuperBPE. ``train`` learns
    plain BPE up to the transition point, then merges that may span words, learned on the chunks
    of a pattern that does not cut at spaces, which the tokenizer then encodes with; every
    stage-1 merge and id is kept. ``extend`` (a config without a transition) makes its new merges
    superwords on top of the whole tokenizer: text in which no new merge applies then encodes as
    before only within those longer chunks. See superwords.py. The corpus is read twice, so it
    cannot be a one-shot iterator."""
    parity: ParityConfig | None = None
    """A :class:`~parity.ParityConfig`: parity-aware BPE over ``train(languages={name: corpus})``,
    which at each merge serves the worst-compressed language (see parity_reference.py for what is
    counted). With ``tie_break="huggingface"`` the merges are ``tokenizers``' ``ParityBpeTrainer``'s."""

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
