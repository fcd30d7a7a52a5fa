"""Training and encoding on a Ray cluster (the ``hf_bbpe[ray]`` extra).

* :func:`count_chunks`: split and count a ``ray.data.Dataset`` as Ray tasks, combine the partial
  counts inside Ray (a hash-partitioned aggregate), and stream the final counts to the driver,
  which trains with the engine's merge loop (``Tokenizer.train_from_counts``).
  ``Tokenizer.train(ds, ...)`` and ``Tokenizer.extend(ds, ...)`` call it.
* :func:`encode_dataset`: a Ray Dataset with an ``input_ids`` column, computed by stateful
  actors that each load the tokenizer once; :func:`encode_texts`, the same for a list of texts,
  with the ids back in order (``hf-bbpe encode-corpus --ray``).

``import hf_bbpe`` never imports this package; importing it without Ray raises an ImportError
that names the extra to install.
"""

from __future__ import annotations

from .ray_import import require_ray

require_ray()

from .counting import count_chunks  # noqa: E402
from .encoding import encode_dataset, encode_texts  # noqa: E402

__all__ = ["count_chunks", "encode_dataset", "encode_texts"]
