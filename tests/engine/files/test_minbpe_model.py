"""``.model`` files: minbpe's format both ways, the extended variant, clear errors, atomic writes.

minbpe is not on PyPI, so "minbpe loads what we save" and "we load what minbpe saves" are tested
against tests/reference_bpe.py's ``minbpe_load``/``minbpe_save``, a reimplementation of minbpe's
``Tokenizer.load``/``Tokenizer.save`` (same version line, stripped pattern line, whitespace-split
special-token lines, merge ids implied 256, 257, ... in file order).
"""

from __future__ import annotations

import hashlib
import os
import random
import unicodedata
from pathlib import Path

import pytest
from tests.support.reference_bpe import minbpe_load, minbpe_save, naive_encode

from hf_bbpe import BasicTokenizer, RegexTokenizer, Tokenizer
from hf_bbpe.engine.files.minbpe_model import ModelFileError

TEXT_DIR = Path(__file__).resolve().parents[2] / "data" / "text"
SAMPLE = (TEXT_DIR / "mix-sample.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def trained():
    tok = RegexTokenizer("gpt4")
    tok.train(SAMPLE.split("\n\n"), 700, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 700, "<|im_start|>": 701})
    return tok


def assert_same_tokenizer(a, b):
    assert type(a) is type(b)
    assert a.pattern == b.pattern
    assert list(a.merges.items()) == list(b.merges.items())
    assert a.byte_ids == b.byte_ids
    assert a.special_tokens == b.special_tokens
    assert a.vocab == b.vocab
    text = SAMPLE[:20000] + "<|endoftext|>"
    assert a.encode(text, allowed_special="all") == b.encode(text, allowed_special="all")


# -------------------------------------------------------------------- minbpe layout


@pytest.mark.parametrize("cls", [RegexTokenizer, BasicTokenizer])
def test_minbpe_loads_what_we_save(tmp_path, cls):
    tok = cls()
    tok.train(SAMPLE[:30000], 400, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 400})
    tok.save(tmp_path / "tok")
    assert (tmp_path / "tok.model").read_text(encoding="utf-8").startswith("minbpe v1\n")
    pattern, specials, merges = minbpe_load(tmp_path / "tok.model")
    assert pattern == tok.pattern
    assert specials == tok.special_tokens
    assert list(merges.items()) == list(tok.merges.items())
    # minbpe would encode with what it read exactly as we do
    assert naive_encode(SAMPLE[:3000], merges, pattern or None) == tok.encode_ordinary(SAMPLE[:3000])


@pytest.mark.parametrize("cls", [RegexTokenizer, BasicTokenizer])
def test_we_load_what_minbpe_saves(tmp_path, cls):
    tok = cls()
    tok.train(SAMPLE[:30000], 400, progress=False)
    specials = {"<|endoftext|>": 400, "<|fim|>": 401}
    minbpe_save(tmp_path / "m.model", tok.pattern, specials, tok.merges)
    loaded = Tokenizer.from_file(tmp_path / "m.model")
    tok.register_special_tokens(specials)
    assert_same_tokenizer(loaded, tok)
    into = RegexTokenizer()  # load() into an existing object replaces everything
    into.load(tmp_path / "m.model")
    assert list(into.merges.items()) == list(tok.merges.items()) and into.pattern == tok.pattern


def test_round_trip(tmp_path, trained):
    trained.save(tmp_path / "rt")
    assert_same_tokenizer(Tokenizer.from_file(tmp_path / "rt.model"), trained)
    saved = (tmp_path / "rt.model").read_bytes()
    Tokenizer.from_file(tmp_path / "rt.model").save(tmp_path / "again")
    assert (tmp_path / "again.model").read_bytes() == saved


def test_vocab_file_lists_tokens_as_minbpe(tmp_path, trained):
    trained.save(tmp_path / "v")
    header, *lines = (tmp_path / "v.vocab").read_text(encoding="utf-8").splitlines()
    model_hash = hashlib.sha256((tmp_path / "v.model").read_bytes()).hexdigest()
    assert header == f"# listing of v.model sha256 {model_hash}"  # which .model it lists (a kill between them)
    assert len(lines) == len(trained.vocab)
    assert "[a] 97" in lines
    assert "[\\u000a] 10" in lines  # control characters escaped as minbpe's render_token does
    shown = {idx: render(token) for idx, token in trained.vocab.items()}
    for (a, b), new in list(trained.merges.items())[:50]:
        assert f"[{shown[a]}][{shown[b]}] -> [{shown[new]}] {new}" in lines
    assert "[<|endoftext|>] 700" in lines


def render(token: bytes) -> str:
    """minbpe's render_token: invalid UTF-8 replaced, control characters as \\uXXXX."""
    text = token.decode("utf-8", errors="replace")
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch).startswith("C") else ch for ch in text)


# ----------------------------------------------------------------- extended layout


def test_permuted_byte_ids_use_the_extended_layout(tmp_path):
    byte_ids = list(range(256))
    random.Random(0).shuffle(byte_ids)
    a, b, c = (byte_ids[x] for x in b"abc")
    merges = {(a, b): 256, (256, c): 257, (c, c): 258, (257, 258): 259}
    tok = Tokenizer.from_merges(merges, pattern="gpt2", byte_ids=byte_ids, special_tokens={"<|endoftext|>": 260})
    tok.save(tmp_path / "perm")
    text = (tmp_path / "perm.model").read_text(encoding="utf-8")
    assert text.startswith("hf_bbpe v1\n")
    loaded = Tokenizer.from_file(tmp_path / "perm.model")
    assert loaded.byte_ids == byte_ids
    assert list(loaded.merges.items()) == list(merges.items())
    assert loaded.encode("abccc abc") == naive_encode("abccc abc", merges, tok.pattern, byte_ids)
    assert loaded.encode("abccc abc") == tok.encode("abccc abc")
    with pytest.raises(AssertionError):
        minbpe_load(tmp_path / "perm.model")  # minbpe refuses it instead of misreading it


def test_id_holes_use_the_extended_layout(tmp_path):
    """Merges trained around a registered special token skip its id: minbpe cannot number them."""
    tok = RegexTokenizer()
    tok.register_special_tokens({"<|endoftext|>": 300})
    tok.train(SAMPLE[:30000], 400, progress=False)
    tok.save(tmp_path / "holes")
    assert (tmp_path / "holes.model").read_text(encoding="utf-8").startswith("hf_bbpe v1\n")
    assert_same_tokenizer(Tokenizer.from_file(tmp_path / "holes.model"), tok)


# ----------------------------------------------------------------------- bad files


def write(tmp_path, text, name="bad.model"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


BAD_FILES = [
    ("minbpe v2\n\n0\n", 1),
    ("", 1),
    ("minbpe v1\n", 2),
    ("minbpe v1\nxyz\nthree\n", 3),
    ("minbpe v1\nxyz\n2\n<|a|> 300\n", 5),
    ("minbpe v1\nxyz\n1\n<|a|> x\n", 4),
    ("minbpe v1\nxyz\n0\n97 97\n97 x\n", 5),
    ("minbpe v1\nxyz\n0\n97 97\n97 97 98\n", 5),
    ("minbpe v1\nxyz\n0\n97 97\n97 300\n", 5),  # 300 is not defined (yet)
    ("minbpe v1\nxyz\n0\n97 97\n97 97\n", 5),  # the same pair twice
    ("minbpe v1\nxyz\n0\n97 -1\n", 4),
    ("hf_bbpe v1\nxyz\n0\n1 2 3\n", 4),  # not 256 byte ids
    ("hf_bbpe v1\nxyz\n0\n" + " ".join(map(str, range(256))) + "\n97 97\n", 5),  # missing the new id
]


@pytest.mark.parametrize("text, line", BAD_FILES, ids=[repr(t[:40]) for t, _ in BAD_FILES])
def test_bad_model_files_name_file_and_line(tmp_path, text, line):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=f"{path}:{line}:"):
        Tokenizer.from_file(path)


def test_special_token_colliding_with_a_merge_is_an_error(tmp_path):
    path = write(tmp_path, "minbpe v1\nxyz\n1\n<|a|> 256\n97 97\n")
    with pytest.raises(ModelFileError, match=str(path)):
        Tokenizer.from_file(path)


def test_not_a_model_file(tmp_path):
    path = write(tmp_path, "minbpe v1\n\n0\n", name="tok.vocab")
    with pytest.raises(ValueError, match="tok.vocab"):
        Tokenizer.from_file(path)
    binary = tmp_path / "bin.model"
    binary.write_bytes(b"minbpe v1\n\xff\xfe\n0\n")
    with pytest.raises(ValueError, match="bin.model"):
        Tokenizer.from_file(binary)


@pytest.mark.parametrize("pattern, special", [("a+|\n| ", "<|x|>"), ("gpt4", "<|x\ny|>")], ids=["pattern", "special"])
def test_line_breaks_are_refused(tmp_path, pattern, special):
    tok = RegexTokenizer(pattern)
    tok.train("aaa aa\n\naaaa", 258, progress=False)
    tok.register_special_tokens({special: 400})
    with pytest.raises(ValueError, match="line break"):
        tok.save(tmp_path / "nl")
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------ atomicity


def test_failed_save_leaves_the_old_files(tmp_path, trained, monkeypatch):
    trained.save(tmp_path / "tok")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    other = BasicTokenizer()
    other.train("something else entirely", 260, progress=False)

    def fail(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="simulated"):
        other.save(tmp_path / "tok")
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temp files left either
    assert_same_tokenizer(Tokenizer.from_file(tmp_path / "tok.model"), trained)


def test_saved_files_have_a_normal_files_mode(tmp_path, trained):
    """Atomic writes go through a private temp file; the result must not stay private."""
    umask = os.umask(0o022)
    try:
        trained.save(tmp_path / "tok")
    finally:
        os.umask(umask)
    assert (tmp_path / "tok.model").stat().st_mode & 0o777 == 0o644
    (tmp_path / "tok.model").chmod(0o640)
    trained.save(tmp_path / "tok")  # replacing keeps the file's mode
    assert (tmp_path / "tok.model").stat().st_mode & 0o777 == 0o640


# ------------------------------------------------------------- load takes what save took


def test_load_and_from_file_take_the_save_prefix(tmp_path, trained):
    """save("ext") writes ext.model; load("ext") and from_file("ext") read it, as minbpe users expect."""
    trained.save(tmp_path / "ext")
    assert (tmp_path / "ext.model").is_file() and not (tmp_path / "ext").exists()
    assert_same_tokenizer(Tokenizer.from_file(tmp_path / "ext"), trained)
    assert_same_tokenizer(Tokenizer.from_file(str(tmp_path / "ext")), trained)
    loaded = RegexTokenizer()
    loaded.load(tmp_path / "ext")
    assert_same_tokenizer(loaded, trained)
    basic = BasicTokenizer()
    basic.train("aaabdaaabac", 259)
    basic.save(tmp_path / "dotted.v2")  # a prefix with a dot: dotted.v2.model
    assert_same_tokenizer(Tokenizer.from_file(tmp_path / "dotted.v2"), basic)


def test_an_existing_file_named_by_the_prefix_comes_first(tmp_path, trained):
    trained.save(tmp_path / "ext")
    (tmp_path / "ext").write_text("not a model\n")
    with pytest.raises(ModelFileError, match="expected a .model file"):
        Tokenizer.from_file(tmp_path / "ext")
    (tmp_path / "ext").unlink()
    (tmp_path / "ext").mkdir()  # a folder is not a file: the prefix's .model is read
    assert_same_tokenizer(Tokenizer.from_file(tmp_path / "ext"), trained)


@pytest.mark.parametrize("name", ["missing", "missing.model"])
def test_a_missing_file_names_both_paths_tried(tmp_path, name):
    path = tmp_path / name
    message = f"no tokenizer file at {path} or {path}.model"
    with pytest.raises(FileNotFoundError, match=message.replace(".", r"\.")):
        Tokenizer.from_file(path)
    with pytest.raises(FileNotFoundError, match=message.replace(".", r"\.")):
        RegexTokenizer().load(str(path))
