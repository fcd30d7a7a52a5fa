"""The SuperBPE paper's tokenizers load exactly (Liu et al., COLM 2025; tests/data/superbpe).

A SuperBPE tokenizer is a GPT-2-style ``vocab.json`` + ``merges.txt`` whose later merges make
superwords (``" of the"``), run by ``tokenizers`` with its stage-2 pattern as an isolated Split
(the text between the pattern's matches, words and the spaces between them, is one chunk). The
reference is ``tokenizers`` running the files as the paper's code does. SuperBPE tokenizers with
other transition points are cut from the released one (its first merges, then the superword
merges they still allow); the released files themselves are in the ``slow`` tests. Every path
gives ``tokenizers``' ids on every document of the multilingual + code sample: the engine from
the folder (known by sha256, or by the superword tokens its merges make, or told by ``pattern=``
/ ``pre_tokenizer=``), from a tokenizer.json built as the shared README builds it, the engine's
``.model`` file read back, the tokenizer.json the engine exports (run by ``tokenizers``),
``BBPETokenizer``, a saved folder loaded back by ``BBPETokenizer`` and by ``AutoTokenizer`` (the
fast twin).
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import pytest
from tokenizers import Tokenizer as HFTokenizer
from transformers import AutoTokenizer

import conversion
from hf_bbpe import Tokenizer
from hf_bbpe.engine.chunking.patterns import GPT2_SPLIT_PATTERN, SUPERBPE_STAGE1_SPLIT_PATTERN, SUPERBPE_STAGE2_SPLIT_PATTERN
from hf_bbpe.engine.chunking.pre_tokenizers import ByteLevel, Sequence, Split
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
from tests.support.superbpe import RELEASED, cut_superbpe, paper_tokenizer, released_folder

DATA = Path(__file__).resolve().parents[1] / "data"
DOCS = [doc for doc in (DATA / "text" / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n") if doc.strip()]
TRANSITIONS = [300, 1000, 4000]
"""Stage-1 merges of the SuperBPE tokenizers cut from the released one (about 6,000, 9,700 and
20,000 merges in all)."""


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("superbpe")


@functools.cache
def _cut(stage1_merges: int, directory: Path) -> Path:
    return cut_superbpe(stage1_merges, directory / f"t{stage1_merges}")


@functools.cache
def _expected(folder: Path, pattern: str = SUPERBPE_STAGE2_SPLIT_PATTERN) -> tuple[tuple[int, ...], ...]:
    hf = paper_tokenizer(folder, pattern)
    return tuple(tuple(encoding.ids) for encoding in hf.encode_batch(DOCS, add_special_tokens=False))


def _differing(expected, encode, texts: list[str] = DOCS) -> list[str]:
    return [text for text, ids in zip(texts, expected) if list(encode(text)) != list(ids)]


def _load_quietly(folder: Path, **options) -> Tokenizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return conversion.load(folder, **options)


@pytest.mark.parametrize("stage1_merges", TRANSITIONS)
def test_other_transition_points_load_exactly(stage1_merges, folders):
    """A SuperBPE tokenizer that no preset knows: its superword tokens give it the stage-2
    pattern (with a warning saying so), which the C scanner cuts; tokenizers' ids on every
    document."""
    folder = _cut(stage1_merges, folders)
    with pytest.warns(UserWarning, match=r"merges\.txt: .* span words \(superwords, .*'superbpe_stage2'"):
        tok = conversion.load(folder)
    assert tok.pattern == SUPERBPE_STAGE2_SPLIT_PATTERN and tok._scanner is not None
    assert tok._encoder._kernel.split_long_pieces(tok._scanner)  # (long pieces by parts in the test)
    assert _differing(_expected(folder), tok.encode_ordinary) == []
    assert [tok.encode_ordinary(doc) for doc in DOCS] == tok.encode_batch(DOCS, num_threads=2)


def test_the_pipeline_can_be_named(folders):
    """pattern= (a name or the regex) and pre_tokenizer= name the pipeline without a warning; GPT-2's
    pattern, the default for files of plain BPE, gives other ids (the choice matters)."""
    folder = _cut(1000, folders)
    expected = _expected(folder)
    pipeline = Sequence([Split(SUPERBPE_STAGE2_SPLIT_PATTERN, "isolated"), ByteLevel(False, use_regex=False)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for options in ({"pattern": "superbpe_stage2"}, {"pattern": SUPERBPE_STAGE2_SPLIT_PATTERN},
                        {"pre_tokenizer": pipeline}, {"pre_tokenizer": pipeline.to_json()}):
            tok = conversion.load(folder, **options)
            assert tok._scanner is not None, options
            assert _differing(expected, tok.encode_ordinary) == [], options
        gpt2 = conversion.load(folder, pattern="gpt2")
    assert gpt2.pattern == GPT2_SPLIT_PATTERN
    assert len(_differing(expected, gpt2.encode_ordinary)) > len(DOCS) // 2
    with pytest.raises(TypeError, match="pattern= or pre_tokenizer=, not both"):
        conversion.load(folder, pattern="gpt2", pre_tokenizer=pipeline)


def test_plain_bpe_files_keep_gpt2s_pattern(folders):
    """Files without superword tokens (the stage-1 merges alone) load with GPT-2's pattern and no
    warning, as before."""
    folder = _cut(1000, folders)
    plain = folder.parent / "plain"
    plain.mkdir()
    lines = (folder / "merges.txt").read_text(encoding="utf-8").split("\n")[: 1 + 1000]
    (plain / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    import json

    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    (plain / "vocab.json").write_text(json.dumps({t: i for t, i in vocab.items() if i < 243 + 1000}), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = conversion.load(plain)
    assert tok.pattern == GPT2_SPLIT_PATTERN


def test_runs_of_wide_spaces_are_no_superwords(tmp_path):
    """A plain BPE tokenizer whose tokens hold runs of spaces of several kinds (GPT-2's pattern
    makes ``"\u3000 \u3000"`` one chunk) keeps GPT-2's pattern: a token spans words only when its
    characters, not its bytes, put a space between two non-spaces."""
    from hf_bbpe import RegexTokenizer

    tok = RegexTokenizer("gpt2")
    tok.train("word\u3000 \u3000 other\n" * 50, 256 + 12, num_workers=1)
    assert "\u3000 \u3000".encode() in tok.vocab.values()
    conversion.to_gpt2_files(tok, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = conversion.load(tmp_path)
    assert loaded.pattern == GPT2_SPLIT_PATTERN and loaded.merges == tok.merges


@pytest.mark.transformers_compat
def test_every_path_gives_tokenizers_ids(folders, tmp_path):
    """A cut SuperBPE tokenizer through the engine's .model file, its tokenizer.json export run by
    tokenizers, BBPETokenizer, and a saved folder (BBPETokenizer and the AutoTokenizer fast twin);
    and a tokenizer.json built as the shared README builds it, loaded by conversion.load."""
    folder = _cut(1000, folders)
    expected = _expected(folder)
    tok = _load_quietly(folder)

    tok.save(tmp_path / "engine")
    again = Tokenizer.from_file(tmp_path / "engine.model")
    assert again._scanner is not None
    assert _differing(expected, again.encode_ordinary) == []

    conversion.to_tokenizer_json(tok, tmp_path / "exported.json")
    exported = HFTokenizer.from_file(str(tmp_path / "exported.json"))
    assert _differing(expected, lambda t: exported.encode(t, add_special_tokens=False).ids) == []

    paper_tokenizer(folder).save(str(tmp_path / "paper.json"))
    from_json = conversion.load(tmp_path / "paper.json")
    assert from_json.pattern == SUPERBPE_STAGE2_SPLIT_PATTERN and from_json._scanner is not None
    assert _differing(expected, from_json.encode_ordinary) == []

    bbpe = BBPETokenizer.from_engine(tok)
    assert _differing(expected, lambda t: bbpe(t)["input_ids"]) == []
    bbpe.save_pretrained(tmp_path / "folder")
    loaded = BBPETokenizer.from_pretrained(tmp_path / "folder")
    fast = AutoTokenizer.from_pretrained(tmp_path / "folder")
    assert fast.is_fast
    assert _differing(expected, lambda t: loaded(t)["input_ids"]) == []
    assert _differing(expected, lambda t: fast(t)["input_ids"]) == []


def test_stage1_pattern_cut_files_load_exactly(folders):
    """The stage-1 pattern (the paper's plain BPE) through pattern=, its C scanner, against
    tokenizers running the same files with it."""
    folder = _cut(4000, folders)
    tok = conversion.load(folder, pattern="superbpe_stage1")
    assert tok.pattern == SUPERBPE_STAGE1_SPLIT_PATTERN and tok._scanner is not None
    assert _differing(_expected(folder, SUPERBPE_STAGE1_SPLIT_PATTERN), tok.encode_ordinary) == []


@pytest.mark.slow
@pytest.mark.transformers_compat
@pytest.mark.parametrize("name", list(RELEASED))
def test_released_tokenizers_load_exactly(name, folders, tmp_path):
    """The released files (known by sha256: no warning, the paper's pattern) give tokenizers' ids
    on every document through the engine, load_preset, the exported tokenizer.json and a saved
    folder's fast twin."""
    folder = released_folder(name, folders / name)
    pattern = RELEASED[name][1]
    expected = _expected(folder, pattern)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = conversion.load(folder)
    assert tok.pattern == pattern and tok._scanner is not None and len(tok.vocab) == 200_000
    assert _differing(expected, tok.encode_ordinary) == []
    assert conversion.load_preset(name, folder).merges == tok.merges
    conversion.to_tokenizer_json(tok, tmp_path / "exported.json")
    exported = HFTokenizer.from_file(str(tmp_path / "exported.json"))
    assert _differing(expected, lambda t: exported.encode(t, add_special_tokens=False).ids) == []
    BBPETokenizer.from_engine(tok).save_pretrained(tmp_path / "folder")
    fast = AutoTokenizer.from_pretrained(tmp_path / "folder")
    assert _differing(expected, lambda t: fast(t)["input_ids"]) == []
