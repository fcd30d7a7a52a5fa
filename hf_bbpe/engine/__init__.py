"""The engine: byte-level BPE with no transformers in it (``Tokenizer`` in tokenizer.py).

Its layers, each a folder: ``chunking/`` (how text is cut into chunks), ``encoding/`` (chunks to
ids), ``training/`` (corpus to merges) and ``files/`` (the engine's own files, written atomically).
"""
