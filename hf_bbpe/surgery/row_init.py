"""Values for the new rows of a grown [vocab, width] matrix (embedding, LM head, head bias).

The same code runs on a tensor in memory and on a tensor streamed from a safetensors file: it only
sees a ``read_rows(start, stop)`` callable and reads the old rows in fixed-size chunks. That is why
in-memory and checkpoint surgery give bit-identical rows, and why checkpoint surgery never holds a
whole matrix.

Statistics are accumulated in float64 and the result is cast to the matrix dtype once.

A matrix is an *input* matrix (an untied input embedding) or an *output* matrix (the LM head, its
bias, or an embedding tied to the head). Rows with sources get the sources' mean in input
matrices; in output matrices ``RowPlan.output_rows`` may damp it (see :class:`OutputRows`), so
that new tokens start with sub-token meaning in the input rows and modest logits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

#: Initialisations that need nothing but the existing rows.
ROW_INIT_METHODS = ("mean", "normal", "zeros")


@dataclass(frozen=True)
class OutputRows:
    """What a row with sources gets in an output matrix (LM head weight and bias, tied embedding):
    ``scale * ((1 - mean_share) * sources' mean + mean_share * mean of the reference rows)``.

    The plain sources' mean (FVT) gives a new merged token about the logits of its pieces, yet it
    is rarer than its first piece: at step 0 the new tokens together take too much probability.
    ``scale < 1`` pulls the new logits toward zero, ``mean_share > 0`` toward the average logit.
    """

    scale: float = 1.0
    mean_share: float = 0.0

    def __post_init__(self) -> None:
        if not (0.0 <= self.scale <= 1.0 and 0.0 <= self.mean_share <= 1.0):
            raise ValueError(f"{self}: scale and mean_share must be in [0, 1]")


#: Output rows of the sub-token inits (token_adding.SUBTOKEN_INITS); input rows always get the
#: plain sub-token mean. The values come from exploratory sweeps on the benchmark's tiny model:
#: a share of 0.15-0.3 was best at step 0; a scale of 0.2-0.4 was up to 1% better than 0.5 at
#: step 0 but worse than plain FVT after fine-tuning (0.3), so 0.5. scripts/bench_extension_model.py
#: compares the resulting inits.
SUBTOKEN_OUTPUT_ROWS = {
    "subtoken_mean": OutputRows(),
    "subtoken_scaled": OutputRows(scale=0.5),
    "subtoken_damped": OutputRows(mean_share=0.2),
}


def output_rows_for(init: object) -> OutputRows:
    """The output rows of an ``init`` name (undamped for every init but the damped sub-token ones)."""
    return SUBTOKEN_OUTPUT_ROWS.get(init, OutputRows()) if isinstance(init, str) else OutputRows()


# Rows are read in chunks of about this many elements (2 MiB in float64); a constant, not a
# memory-dependent choice, so that every caller sums in the same order.
CHUNK_ELEMENTS = 1 << 18

ReadRows = Callable[[int, int], torch.Tensor]
Sources = tuple[int, ...] | Mapping[int, float]


@dataclass(frozen=True)
class RowPlan:
    """Which rows of a matrix growing from ``old_rows`` to ``new_rows`` get new values, and how.

    Every row in ``[old_rows, new_rows)`` is new. A key of ``sources`` below ``old_rows`` re-initialises
    an existing row (an id the old tokenizer never produced, e.g. a padding row). A row with
    non-empty sources gets the mean of those old rows: a tuple of row ids (a plain mean; a repeated
    id counts each time) or a mapping ``{row id: weight}`` (a weighted mean). Every other new row
    gets ``method``, computed from the statistics of the first ``reference_rows`` rows (the old
    vocabulary). In output matrices, rows with sources follow ``output_rows``.
    """

    old_rows: int
    new_rows: int
    reference_rows: int
    method: str = "mean"
    sources: Mapping[int, Sources] = field(default_factory=dict)
    output_rows: OutputRows = OutputRows()

    def __post_init__(self) -> None:
        if self.method not in ROW_INIT_METHODS:
            raise ValueError(f"unknown init method {self.method!r}; expected one of {ROW_INIT_METHODS}")
        if self.new_rows < self.old_rows:
            raise ValueError(f"cannot shrink {self.old_rows} rows to {self.new_rows}: surgery never drops rows")
        if not 0 < self.reference_rows <= self.old_rows:
            raise ValueError(f"reference_rows={self.reference_rows} must be in [1, old_rows={self.old_rows}]")
        for row, srcs in self.sources.items():
            if not 0 <= row < self.new_rows:
                raise ValueError(f"row {row} is outside the grown matrix of {self.new_rows} rows")
            for src in srcs:
                if not 0 <= src < self.old_rows:
                    raise ValueError(f"row {row}: source row {src} is not one of the {self.old_rows} existing rows")

    @property
    def target_rows(self) -> list[int]:
        """Rows that receive new values, ascending."""
        reinit = (row for row in self.sources if row < self.old_rows)
        return sorted(set(reinit).union(range(self.old_rows, self.new_rows)))


def chunk_rows(width: int) -> int:
    """Rows per read chunk for a matrix of this width."""
    return max(1, CHUNK_ELEMENTS // max(1, width))


def _reference_stats(read_rows: ReadRows, n_rows: int, width: int, want_std: bool) -> tuple[torch.Tensor, float]:
    """Column mean (float64 [width]) and the std of all elements of rows [0, n_rows)."""
    total = torch.zeros(width, dtype=torch.float64)
    squares = torch.zeros((), dtype=torch.float64)
    step = chunk_rows(width)
    for start in range(0, n_rows, step):
        # float64 before reducing: float8 tensors cannot be summed or promoted at all
        block = read_rows(start, min(n_rows, start + step)).reshape(-1, width).to(torch.float64)
        total += block.sum(0).cpu()
        if want_std:
            squares += torch.linalg.vector_norm(block).cpu() ** 2
    mean = total / n_rows
    std = 0.0
    if want_std:
        count = n_rows * width
        overall = total.sum() / count
        std = float(torch.sqrt(torch.clamp(squares / count - overall * overall, min=0.0)))
    return mean, std


def new_row_values(
    read_rows: ReadRows, plan: RowPlan, width: int, dtype: torch.dtype, seed: int, *, output: bool = False
) -> torch.Tensor:
    """Values for ``plan.target_rows``: a CPU tensor [len(target_rows), width] of ``dtype``.

    ``read_rows(start, stop)`` returns old rows [start, stop) as a tensor of ``stop - start`` rows of
    ``width`` elements (any dtype, any device). ``seed`` drives the "normal" draws, which are made
    in ascending row order for the rows without sources, so the result is reproducible.
    ``output`` says the matrix produces logits (LM head, head bias, tied embedding): its rows with
    sources follow ``plan.output_rows``.
    """
    targets = plan.target_rows
    out = torch.zeros(len(targets), width, dtype=torch.float64)
    plain = [i for i, row in enumerate(targets) if not plan.sources.get(row)]
    damping = plan.output_rows if output else OutputRows()
    need_mean = (bool(plain) and plan.method != "zeros") or (damping.mean_share > 0 and len(plain) < len(targets))
    if need_mean:
        want_std = bool(plain) and plan.method == "normal"
        mean, std = _reference_stats(read_rows, plan.reference_rows, width, want_std=want_std)
    if plain and plan.method == "mean":
        out[plain] = mean
    elif plain and plan.method == "normal":
        generator = torch.Generator().manual_seed(seed)
        draws = torch.randn(len(plain), width, generator=generator, dtype=torch.float32)
        out[plain] = draws.to(torch.float64) * std
    cache: dict[int, torch.Tensor] = {}
    for i, row in enumerate(targets):
        srcs = plan.sources.get(row)
        if not srcs:
            continue
        for src in srcs:
            if src not in cache:
                cache[src] = read_rows(src, src + 1).reshape(width).to(device="cpu", dtype=torch.float64)
        if isinstance(srcs, Mapping):
            total = float(sum(srcs.values()))
            out[i] = sum(cache[src] * (float(weight) / total) for src, weight in srcs.items())
        else:
            out[i] = torch.stack([cache[src] for src in srcs]).mean(0)
        if damping.mean_share:
            out[i] = (1.0 - damping.mean_share) * out[i] + damping.mean_share * mean
        if damping.scale != 1.0:
            out[i] *= damping.scale
    return out.to(dtype)


def plan_for_tokens(
    old_rows: int,
    new_rows: int,
    reference_rows: int,
    method: str,
    new_ids: Sequence[int],
    sources_by_id: Mapping[int, Sequence[int]],
    output_rows: OutputRows = OutputRows(),
) -> RowPlan:
    """The plan for rows of newly added token ids: ids inside the old matrix are re-initialised too."""
    sources = {int(i): tuple(int(s) for s in sources_by_id.get(i, ())) for i in new_ids}
    return RowPlan(old_rows=old_rows, new_rows=new_rows, reference_rows=reference_rows, method=method,
                   sources=sources, output_rows=output_rows)
