"""Build the C kernels (chunk counting and merge loop for training, chunk encoder with merge recovery, pre-tokenizer); metadata is in pyproject.toml."""

import os

from setuptools import Extension, setup

HASH_H = "hf_bbpe/_hash.h"  # mix64, hash_bytes and PREFETCH, included by three kernels (pyproject's package-data puts it in the sdist)
PRETOK_H = "hf_bbpe/_pretokenize.h"  # the scanner interface _pretokenize.c gives _chunk_bpe.c and _chunk_count.c


def kernel(name: str, source: str, depends: tuple[str, ...] = (), numpy_headers: bool = False) -> Extension:
    """One C extension; numpy_headers: it uses numpy's C API (pyproject's build requirement)."""
    threads = ["-pthread"] if os.name == "posix" else []  # _chunk_bpe and _chunk_count run pthreads
    include_dirs = []
    if numpy_headers:
        import numpy

        include_dirs.append(numpy.get_include())
    return Extension(name, [source], depends=list(depends), extra_compile_args=["-O3", "-std=c99", *threads],
                     extra_link_args=threads, include_dirs=include_dirs)


setup(
    ext_modules=[
        kernel("hf_bbpe.engine.training._chunk_count", "hf_bbpe/_chunk_count.c", (HASH_H, PRETOK_H)),
        kernel("hf_bbpe.engine.training._merge_loop", "hf_bbpe/_merge_loop.c", (HASH_H,)),
        kernel("hf_bbpe.engine.encoding._chunk_bpe", "hf_bbpe/_chunk_bpe.c", (HASH_H, PRETOK_H), numpy_headers=True),  # encode_to_numpy's arrays
        kernel("hf_bbpe.engine.chunking._pretokenize", "hf_bbpe/_pretokenize.c", (PRETOK_H,)),
    ]
)
