"""Build the C kernels (chunk counting and merge loop for training, chunk encoder with merge recovery, pre-tokenizer); metadata is in pyproject.toml."""

import os
from glob import glob

from setuptools import Extension, setup

CSRC = "hf_bbpe/engine/csrc"  # one folder per kernel, and common/ for what they share (see ARCHITECTURE.md)


def kernel(name: str, folder: str, uses_scanner: bool = False, numpy_headers: bool = False) -> Extension:
    """One C extension built from every .c file of csrc/<folder>; uses_scanner: it includes scan/scanner.h (the
    scanners _pretokenize gives in capsules); numpy_headers: it uses numpy's C API (pyproject's build requirement).
    The headers are package data (pyproject.toml), so the sdist carries them and a wheel builds from it."""
    threads = ["-pthread"] if os.name == "posix" else []  # _chunk_bpe and _chunk_count run pthreads
    include_dirs = [CSRC]
    if numpy_headers:
        import numpy

        include_dirs.append(numpy.get_include())
    sources = sorted(glob(f"{CSRC}/{folder}/*.c"))
    depends = sorted(glob(f"{CSRC}/{folder}/*.h") + glob(f"{CSRC}/common/*.h"))
    if uses_scanner:
        depends.append(f"{CSRC}/scan/scanner.h")
    return Extension(name, sources, depends=depends, extra_compile_args=["-O3", "-std=c99", *threads],
                     extra_link_args=threads, include_dirs=include_dirs)


setup(
    ext_modules=[
        kernel("hf_bbpe.engine.training._chunk_count", "count", uses_scanner=True),
        kernel("hf_bbpe.engine.training._merge_loop", "merge"),
        kernel("hf_bbpe.engine.encoding._chunk_bpe", "encode", uses_scanner=True, numpy_headers=True),  # encode_to_numpy's arrays
        kernel("hf_bbpe.engine.chunking._pretokenize", "scan"),
    ]
)
