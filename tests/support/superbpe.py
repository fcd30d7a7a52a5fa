"""The SuperBPE paper's released tokenizers, and smaller SuperBPE tokenizers cut from them.

tests/data/superbpe holds the merges.txt of both released tokenizers, xz-compressed (see
PROVENANCE.md); their vocab.json is rebuilt here byte for byte (the single byte symbols that UTF-8
uses, sorted, then one token per merge, as ``json.dumps(..., ensure_ascii=False,
separators=(",", ":"))``), and both files' sha256 are checked against the released ones. The
reference is ``tokenizers`` running them as the paper's code does (the shared data README's
construction): ``Split(pattern, "isolated")`` then ``ByteLevel(use_regex=False)``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
from pathlib import Path

from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode
from hf_bbpe.engine.encoding.encoder import NEVER_IN_UTF8
from hf_bbpe.engine.chunking.patterns import SUPERBPE_STAGE1_SPLIT_PATTERN, SUPERBPE_STAGE2_SPLIT_PATTERN

DATA = Path(__file__).resolve().parents[1] / "data" / "superbpe"

RELEASED = {
    "superbpe_t180k": ("t180k-merges.txt.xz", SUPERBPE_STAGE2_SPLIT_PATTERN,
                       "cede7a33d67ce8320f0a34badf05fac8ce4378b8e0a28ff85ce07d6f0cd02e1a",
                       "865e3969581012582f4a50a26cf1eee7c435e1da88bce135f3b5a31eb543540b"),
    "superbpe_baseline": ("baseline-merges.txt.xz", SUPERBPE_STAGE1_SPLIT_PATTERN,
                          "21eac1bdee8270f9f86baeba38afddc2b15d936ad51fc57d616e317702e3513e",
                          "9e1453bb94b2176bf19096858b531b7080c8b6ca7cfb4c5c95419de77ae73461"),
}
"""preset name -> (compressed merges.txt, pattern, sha256 of merges.txt, sha256 of vocab.json)."""

T180K_STAGE1_MERGES = 180_000 - 243
"""The released SuperBPE tokenizer's merges learnt in stage 1 (its vocabulary at the transition
point, 180,000 tokens, less its 243 single bytes); the rest are stage 2's."""

SINGLE_BYTES = sorted(bytes_to_unicode()[b] for b in range(256) if b not in NEVER_IN_UTF8)
"""The 243 single-byte tokens of both released files, in their vocab.json order."""


@functools.cache
def released_merges(name: str) -> tuple[tuple[str, str], ...]:
    """The merges of a released tokenizer, as (left, right) symbol strings, in order."""
    text = lzma.decompress((DATA / RELEASED[name][0]).read_bytes()).decode("utf-8")
    lines = text.split("\n")
    assert lines[0] == "#version: 0.2" and lines[-1] == ""
    return tuple(tuple(line.split(" ")) for line in lines[1:-1])


def _write(folder: Path, merges: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> Path:
    """vocab.json (single bytes, then one token per merge) and merges.txt in the released layout."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {symbol: idx for idx, symbol in enumerate(SINGLE_BYTES)}
    for left, right in merges:
        vocab[left + right] = len(vocab)
    (folder / "vocab.json").write_bytes(json.dumps(vocab, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    lines = ["#version: 0.2", *(f"{left} {right}" for left, right in merges), ""]
    (folder / "merges.txt").write_bytes("\n".join(lines).encode("utf-8"))
    return folder


def released_folder(name: str, folder: Path) -> Path:
    """The released tokenizer's vocab.json + merges.txt in ``folder``, byte for byte."""
    _write(folder, released_merges(name))
    for file, digest in (("merges.txt", RELEASED[name][2]), ("vocab.json", RELEASED[name][3])):
        assert hashlib.sha256((folder / file).read_bytes()).hexdigest() == digest, f"{name}'s {file} is not the released one"
    return folder


def cut_superbpe(stage1_merges: int, folder: Path) -> Path:
    """A SuperBPE tokenizer with another transition point: the released t = 180K tokenizer's first
    ``stage1_merges`` merges (plain BPE), then its stage-2 merges (superwords) whose two parts it
    still has, in order. Written as vocab.json + merges.txt with ids in merge order."""
    merges = released_merges("superbpe_t180k")
    kept = list(merges[:stage1_merges])
    have = set(SINGLE_BYTES) | {left + right for left, right in kept}
    for left, right in merges[T180K_STAGE1_MERGES:]:
        if left in have and right in have:
            kept.append((left, right))
            have.add(left + right)
    return _write(folder, kept)


def paper_tokenizer(folder: Path, pattern: str = SUPERBPE_STAGE2_SPLIT_PATTERN):
    """The tokenizer of ``folder`` as ``tokenizers`` runs it in the paper's code."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok
