"""Corpus to merges: the training API (``api.py``), counting (``counting.py``, the C counter;
``counting_reference.py``, its Python twin), counts files, text files, the merge loop
(``merge_loop.py``, the C kernel or ``merge_loop_reference.py``) and SuperBPE's superwords.
"""
