"""The shard formats by name (``write_token_shards(format=...)``, ``encode-corpus --format``)."""

from __future__ import annotations

from .llmc_shards import LlmcShards
from .megatron_indexed import MegatronIndexed
from .nanogpt_bins import NanoGPTBins
from .npy_shards import NpyShards
from .olmo_memmaps import OlmoMemmaps
from .shard_format import ShardFormat

FORMATS: dict[str, ShardFormat] = {fmt.name: fmt for fmt in (NpyShards(), NanoGPTBins(), LlmcShards(),
                                                              MegatronIndexed(), OlmoMemmaps())}


def shard_format(name: str) -> ShardFormat:
    """The format called ``name``; ValueError listing the formats if there is none."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"no shard format {name!r} (formats: {', '.join(FORMATS)})") from None
