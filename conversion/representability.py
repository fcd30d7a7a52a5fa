"""When a merge list can be written as tiktoken ranks.

The rule. Read each token's id as its rank. Rank-based BPE (tiktoken) merges *any* two adjacent
pieces whose bytes form a token, lowest rank first; merge-based BPE (ours, minbpe's) merges
only the pair a merge names, lowest merge first. They agree on every input exactly when:

1. no two tokens have the same bytes, and
2. every token, run through rank-based BPE with only lower ranks allowed, ends as exactly the
   two tokens its merge names.

Why this is enough: under (2), whenever rank-based BPE finds two adjacent pieces forming a
token, those pieces are that token's merge pair (the span they cover has evolved exactly as
the token's own bytes would), so both algorithms see the same candidate merges at every step.
Why it is needed: a token that fails (2) encodes differently on its own bytes. Example: merges
``b c``, ``a b``, ``ab c`` encode "abc" as ``[a, bc]`` by merges (nothing merges ``a`` with
``bc``) but as ``[abc]`` by ranks (``a`` + ``bc`` spells the token ``abc``).

The check recovers the merges the ranks imply (merge_recovery.py) and compares them with the
tokenizer's; it takes well under a second for cl100k-sized vocabularies. A tokenizer in
``"ranks"`` mode runs tiktoken's algorithm already, so only (1) is checked; in the other modes a
non-empty token that no merge builds is an error (tiktoken can produce it, merges never do).
"""

from __future__ import annotations

from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError
from .merge_recovery import rank_bpe


class RepresentabilityError(FormatError):
    """The tokenizer's merges mean something tiktoken ranks cannot say; names the first token."""


def check_rank_representable(tok: Tokenizer) -> None:
    """Raise RepresentabilityError naming the first token (lowest id) that breaks the rule."""
    specials = set(tok.special_tokens.values())
    seen: dict[bytes, int] = {}
    for idx in sorted(tok.vocab):
        if idx in specials:
            continue
        token = tok.vocab[idx]
        if token in seen:
            raise RepresentabilityError(
                f"tokens {seen[token]} and {idx} are both {token!r}; tiktoken ranks need distinct tokens "
                f"(a rank file keeps one id per byte string: written with force=True, id {seen[token]} is dropped)"
            )
        seen[token] = idx
    if tok.mode == "ranks":
        return
    dead = next((idx for idx, token in sorted(tok.unmerged_tokens.items()) if token), None)
    if dead is not None:
        raise RepresentabilityError(
            f"token {tok.vocab[dead]!r} (id {dead}) is built by no merge, so this tokenizer never produces it, but "
            f"tiktoken would. Write with force=True to keep the ranks anyway."
        )
    ranks = tok.mergeable_ranks()
    try:
        as_ranks = Tokenizer.from_ranks(ranks)
    except ValueError as exc:
        raise RepresentabilityError(f"the tokenizer's ranks: {exc}") from None
    recovered = as_ranks.merges
    if recovered == tok.merges:
        return
    by_id = {new: pair for pair, new in tok.merges.items()}
    by_id_recovered = {new: pair for pair, new in recovered.items()}
    for idx in sorted(by_id):
        if by_id[idx] != by_id_recovered.get(idx):
            a, b = by_id[idx]
            parts = rank_bpe(ranks, tok.vocab[idx], max_rank=idx)
            raise RepresentabilityError(
                f"token {tok.vocab[idx]!r} (id {idx}) is merged from {tok.vocab[a]!r} + {tok.vocab[b]!r}, "
                f"but rank-based BPE with lower ranks splits it as {parts!r}: tiktoken would encode "
                f"differently. Write with force=True to keep the ranks anyway."
            )
    raise RepresentabilityError("the ranks imply a different merge order")  # pragma: no cover
