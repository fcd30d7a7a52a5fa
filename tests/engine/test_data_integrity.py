"""The vendored reference files are the real ones (hashes from tests/data/PROVENANCE.md)."""

import hashlib
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"

HASHES = {
    "gpt2/encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "gpt2/vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "tiktoken/o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "text/taylorswift.txt": "c2e39cb822d4ae0caac22152cefc306d466e31217a9c5524e493ad2b76792f57",
    "text/mix-sample.txt": "82fa2bcb125aae84fced95b00e0273e270aee9700b7b69f55e14e712d5ff5569",
}


COMPRESSED_HASHES = {
    "superbpe/t180k-merges.txt.xz": "cede7a33d67ce8320f0a34badf05fac8ce4378b8e0a28ff85ce07d6f0cd02e1a",
    "superbpe/baseline-merges.txt.xz": "21eac1bdee8270f9f86baeba38afddc2b15d936ad51fc57d616e317702e3513e",
}
"""xz copies: the hash of what they hold (the released merges.txt), whatever xz compressed them."""


@pytest.mark.parametrize("name", sorted(HASHES))
def test_vendored_file_hash(name):
    assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == HASHES[name]


@pytest.mark.parametrize("name", sorted(COMPRESSED_HASHES))
def test_vendored_compressed_file_hash(name):
    import lzma

    assert hashlib.sha256(lzma.decompress((DATA / name).read_bytes())).hexdigest() == COMPRESSED_HASHES[name]
