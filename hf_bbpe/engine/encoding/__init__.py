"""Chunks to ids: the chunk encoder (``encoder.py``, the C kernel ``_chunk_bpe`` or its Python
twin), batches on threads, special tokens, token ids and character offsets.
"""
