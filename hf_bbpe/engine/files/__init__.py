"""The engine's files: the one atomic writer, minbpe's ``.model``/``.vocab`` and GPT-2's
``vocab.json``/``merges.txt``.
"""
