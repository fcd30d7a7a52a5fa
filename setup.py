"""Build the C kernels (training merge loop, chunk encoder with merge recovery, pre-tokenizer); metadata is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("hf_bbpe._merge_loop", ["hf_bbpe/_merge_loop.c"], extra_compile_args=["-O3", "-std=c99"]),
        Extension("hf_bbpe._chunk_bpe", ["hf_bbpe/_chunk_bpe.c"], extra_compile_args=["-O3", "-std=c99"]),
        Extension("hf_bbpe._pretokenize", ["hf_bbpe/_pretokenize.c"], extra_compile_args=["-O3", "-std=c99"]),
    ]
)
