"""Cutting text into chunks: split patterns (one registry), pre-tokenizers, normalizers, the
Oniguruma translation of a pattern, the owners' Unicode tables and the byte<->unicode table.
The C scanners (``_pretokenize``) live here too.
"""
