"""The HTML token view in a real headless Chromium: it renders, the token spans are in the DOM with
the right ids and count, and a screenshot shows the coloured tokens.

Needs Debian's ``chromium`` package (/usr/bin/chromium), which ``.ci/run`` installs: skipped with a
reason when it is missing on a developer's machine, but never in CI (``CI=true``).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from hf_bbpe import RegexTokenizer, Tokenizer
from tests.support.cli import GPT2_DIR, TAYLOR, run_cli, save_model_file
from tests.analysis.test_token_view import parse_view_html

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
                                reason="needs headless Chromium: apt-get install -y chromium")

TEXT = ("Hello, world! Tokenizers split text into pieces.\n"
        "中文文本：你好，世界。 Русский текст. naïve café 🎉\n"
        "def f(x):\n    return {\"json\": [1, 2, 3]}  # <|endoftext|>\n")


def chromium(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", *args],
            capture_output=True, timeout=timeout,
        )


def read_png(data: bytes) -> np.ndarray:
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes) into an array of shape (h, w, channels)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, color_type, _, _, interlace = header
    assert depth == 8 and color_type in (2, 6) and interlace == 0, header
    channels = 3 if color_type == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), dtype=np.int32)
    prev = np.zeros(width * channels, dtype=np.int32)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + prev) & 0xFF
        else:  # 1 sub, 3 average, 4 paeth: depend on the pixel to the left, so go pixel by pixel
            row = np.zeros_like(line)
            for x in range(len(line)):
                a = row[x - channels] if x >= channels else 0
                b = prev[x]
                c = prev[x - channels] if x >= channels else 0
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                row[x] = (line[x] + pred) & 0xFF
        out[y] = row
        prev = row
    return out.reshape(height, width, channels)[:, :, :3].astype(np.uint8)


@pytest.fixture(scope="module")
def page(tmp_path_factory, mix_tok_dir):
    """An HTML view written by the CLI for two (or, with conversion, three) tokenizers."""
    tmp = tmp_path_factory.mktemp("view")
    taylor = RegexTokenizer("gpt2")
    taylor.train(TAYLOR.read_text(encoding="utf-8"), 300, progress=False)
    (tmp / "text.txt").write_text(TEXT, encoding="utf-8")
    specs = [str(mix_tok_dir), str(save_model_file(taylor, tmp, "taylor")), str(GPT2_DIR)]
    args = ["view", tmp / "text.txt", "--html", tmp / "view.html", "--ids"]
    for spec in specs:
        args += ["-t", spec]
    run_cli(*args)
    return tmp / "view.html", specs


def test_dom_has_every_token_of_every_tokenizer(page):
    path, specs = page
    proc = chromium("--dump-dom", path.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout.decode("utf-8")
    parsed = parse_view_html(dom)
    assert len(parsed.sections) == len(specs)
    assert parsed.external == []
    for section, spec in zip(parsed.sections, specs):
        if spec == str(GPT2_DIR):
            import conversion
            tok = conversion.from_gpt2_files(GPT2_DIR / "encoder.json", GPT2_DIR / "vocab.bpe")
        else:
            tok = Tokenizer.from_file(spec if spec.endswith(".model") else Path(spec) / "tokenizer.model")
        expected = tok.encode(TEXT, allowed_special="all", disallowed_special=())
        ids = [int(i) for span in section["spans"] for i in span["data-ids"].split()]
        assert ids == expected, spec
        assert section["tokens"] == len(expected)
        assert b"".join(bytes.fromhex(s["data-bytes"]) for s in section["spans"]).decode() == TEXT
    # the browser parsed the counts as text too
    assert f"{len(TEXT)}</span> characters" in dom


def test_screenshot_shows_coloured_tokens(page, tmp_path):
    path, specs = page
    shot = tmp_path / "out.png"
    proc = chromium(f"--screenshot={shot}", "--window-size=1200,800", path.as_uri())
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    pixels = read_png(shot.read_bytes())
    assert pixels.shape[:2] == (800, 1200)
    colours = {tuple(p) for p in pixels.reshape(-1, 3)[::7]}
    assert len(colours) > 50  # text and colours, not a blank page
    # the pastel token backgrounds of the stylesheet are painted
    for rgb in [(0xBF, 0xDB, 0xFE), (0xFD, 0xE6, 0x8A), (0xBB, 0xF7, 0xD0)]:
        assert (pixels == rgb).all(axis=2).sum() > 100, rgb
    white = (pixels == 255).all(axis=2).mean()
    assert 0.2 < white < 0.99
