"""Build the one C extension (the training merge loop); all metadata is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("hf_bbpe._merge_loop", ["hf_bbpe/_merge_loop.c"], extra_compile_args=["-O3", "-std=c99"]),
    ]
)
