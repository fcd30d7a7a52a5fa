"""The transformers layer: ``BBPETokenizer`` (tokenization_bbpe.py), its added tokens, outputs,
saved folders, the one module that touches transformers' private names, chat presets, the model
card and the ``AutoTokenizer`` registration.
"""
