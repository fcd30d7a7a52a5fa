"""Training and encoding on a Ray cluster (the ``hf_bbpe[ray]`` extra).

* :func:`count_chunks`: split and count a ``ray.data.Dataset`` as Ray tasks, combine the partial
  counts inside Ray (a hash-partitioned aggregate), and stream the final counts to the driver,
  which trains with the engine's merge loop (``Tokenizer.train_from_counts``).
  ``Tokenizer.train(ds, ...)`` and ``Tokenizer.extend(ds, ...)`` call it.
* :func:`encode_dataset`: a Ray Dataset with an ``input_ids`` column, computed by stateful
  actors that each load the tokenizer once;
* :class:`TextEncoderPool`: actors that load the tokenizer once and encode list after list of
  texts, ids back in order as numpy arrays (``hf-bbpe encode-corpus --ray`` keeps one for the
  whole run); :func:`encode_texts`, one list on a pool started for it.

``import hf_bbpe`` never imports this package; importing it without Ray raises an ImportError
that names the extra to install.
"""

from __future__ import annotations

from .ray_import import require_ray

require_ray()

from .counting import count_chunks  # noqa: E402
from .encoding import TextEncoderPool, encode_dataset, encode_texts  # noqa: E402

__all__ = ["TextEncoderPool", "count_chunks", "encode_dataset", "encode_texts"]
