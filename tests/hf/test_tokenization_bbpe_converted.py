"""Folders converted from cl100k_base and o200k_base load into BBPETokenizer, with the same ids as tiktoken.

The engine tokenizer comes from the conversion package (tiktoken rank file -> merges), the folder
from ``BBPETokenizer.save_pretrained``; both load paths that need no code of ours beyond the
folder (BBPETokenizer, the tokenizer.json twin) must give tiktoken's own ids. Runs on
transformers 5.x and, through scripts/test.sh, on 4.57.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.hf import EOT, mix_docs
from transformers import AutoTokenizer

from hf_bbpe.engine.chunking.byte_unicode import token_to_unicode
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_folders_converted_from_tiktoken(name, tmp_path):
    import tiktoken
    from conversion.tiktoken_ranks import from_tiktoken
    from tiktoken.load import load_tiktoken_bpe

    if name == "cl100k_base":
        import tiktoken_ext

        path = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
        specials = {EOT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                    "<|endofprompt|>": 100276}
    else:
        path = REPO / "tests" / "data" / "tiktoken" / "o200k_base.tiktoken"
        specials = {EOT: 199999, "<|endofprompt|>": 200018}
    pattern = name.split("_")[0]
    BBPETokenizer.from_engine(from_tiktoken(path, pattern=pattern, special_tokens=specials)).save_pretrained(tmp_path)
    hf = BBPETokenizer.from_pretrained(tmp_path)
    fast = AutoTokenizer.from_pretrained(tmp_path)
    reference = tiktoken.Encoding(name, pat_str=hf.pattern, mergeable_ranks=load_tiktoken_bpe(str(path)),
                                  special_tokens=specials)
    docs = mix_docs()[::3] + [f"x{EOT}y<|endofprompt|>"]
    expected = [reference.encode(doc, allowed_special="all") for doc in docs]
    assert [hf(doc)["input_ids"] for doc in docs] == expected
    assert [fast(doc)["input_ids"] for doc in docs] == expected
    assert len(hf) == max(specials.values()) + 1
    assert hf.convert_ids_to_tokens(expected[0][:5]) == [token_to_unicode(reference.decode_single_token_bytes(i))
                                                         for i in expected[0][:5]]


def test_files_from_bpe_trainer_without_the_bytes_utf8_never_uses(tmp_path):
    """A tokenizer trained by tokenizers' BpeTrainer lacks the 13 bytes UTF-8 never uses (as the
    SuperBPE tokenizers do). Its tokenizer.json through conversion.load and BBPETokenizer (saved and
    loaded back, the fast twin, the folder's own code), and its bare vocab.json + merges.txt (the
    layout SuperBPE released) loaded as a GPT-2-style folder, all give tokenizers' ids."""
    import conversion
    from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode
    from hf_bbpe.engine.encoding.encoder import NEVER_IN_UTF8
    from tests.support.families import bpe_trainer_file
    from tests.support.hf import run_python

    docs = mix_docs()
    alphabet = [bytes_to_unicode()[b] for b in range(256) if b not in NEVER_IN_UTF8]
    reference = bpe_trainer_file(tmp_path / "tokenizer.json", alphabet, docs[::2])
    expected = [reference.encode(doc, add_special_tokens=False).ids for doc in docs]
    hf = BBPETokenizer.from_engine(conversion.load(tmp_path / "tokenizer.json"), eos_token=EOT)
    assert [hf(doc)["input_ids"] for doc in docs] == expected
    hf.save_pretrained(tmp_path / "saved", remote_code=True)  # its code runs alone below
    for tok in (BBPETokenizer.from_pretrained(tmp_path / "saved"), AutoTokenizer.from_pretrained(tmp_path / "saved")):
        assert [tok(doc)["input_ids"] for doc in docs] == expected
    model_files = tmp_path / "model_files"
    model_files.mkdir()
    reference.model.save(str(model_files))  # vocab.json + merges.txt only
    engine, slow = conversion.load(model_files), BBPETokenizer.from_pretrained(model_files)
    assert [engine.encode_ordinary(doc) for doc in docs] == [slow(doc)["input_ids"] for doc in docs] == expected
    # the folder's own code (the pure-Python encoder: a folder holds no compiled module), without hf_bbpe
    out = run_python(f"""
        import importlib, sys
        sys.path.insert(0, {str(tmp_path)!r})
        tok = importlib.import_module("saved.tokenization_bbpe").BBPETokenizer.from_pretrained({str(tmp_path / 'saved')!r})
        print([tok(doc)["input_ids"] for doc in {docs[:40]!r}])
        """, tmp_path, block_hf_bbpe=True)
    assert out.splitlines()[-1] == str(expected[:40])
