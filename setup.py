"""Build the C kernels of the two hot paths (training merge loop, chunk encoder); metadata is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("hf_bbpe._merge_loop", ["hf_bbpe/_merge_loop.c"], extra_compile_args=["-O3", "-std=c99"]),
        Extension("hf_bbpe._chunk_bpe", ["hf_bbpe/_chunk_bpe.c"], extra_compile_args=["-O3", "-std=c99"]),
    ]
)
