"""`hf-bbpe app`: the live page, served by the real command and driven in Debian's Chromium through
chromedriver (typing into the box, reading the rendered tokens back), and `--space` folders.

Skipped without Chromium and its driver (``apt-get install -y chromium chromium-driver``)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import sentencepiece as spm

from hf_bbpe import Tokenizer
from tests.analysis.test_foreign_tokenizers import CL100K, SP_V1, cl100k
from tests.support.cli import CLI, cli_env, run_cli

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
needs_browser = pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
                                   reason="needs Chromium and its driver: apt-get install -y chromium chromium-driver")
TYPED = "Hello wörld, ⅓ of 𝔸! def f(x): return x**2"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(mix_tok_dir):
    port = _free_port()
    proc = subprocess.Popen(CLI + ["app", "-t", str(SP_V1), "-t", str(CL100K), "-t", str(mix_tok_dir),
                                   "--port", str(port)], env=cli_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read().decode("utf-8", "replace"))
            try:
                urllib.request.urlopen(url, timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError("the app did not start within 120 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1300,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def _type_and_read(browser, url: str, text: str) -> dict[str, tuple[int, list[str], list[str]]]:
    """Type ``text`` into the page; each tokenizer's (token count, shown pieces, hover titles)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    box = WebDriverWait(browser, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#text-input textarea"))
    box.clear()
    box.send_keys(text)

    def rendered(driver):
        sections = driver.find_elements(By.CSS_SELECTOR, "#tokens section.tokenizer")
        return sections if sections and all(s.get_attribute("data-chars") == str(len(text)) for s in sections) \
            else None

    sections = WebDriverWait(browser, 30).until(rendered)
    return {s.get_attribute("data-name"): (int(s.get_attribute("data-tokens")),
                                           [t.get_attribute("textContent") for t in s.find_elements(By.CSS_SELECTOR, "span.t")],
                                           [t.get_attribute("title") for t in s.find_elements(By.CSS_SELECTOR, "span.t")])
            for s in sections}


@needs_browser
def test_typed_text_shows_every_tokenizers_tokens_with_exact_counts(server, browser, mix_tok_dir):
    shown = _type_and_read(browser, server, TYPED)
    sp = spm.SentencePieceProcessor(model_file=str(SP_V1))
    ours = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    assert shown["tokenizer.model.v1"][0] == len(sp.encode(TYPED))
    assert shown["cl100k_base"][0] == len(cl100k().encode_ordinary(TYPED))
    assert shown[mix_tok_dir.name][0] == len(ours.encode(TYPED, allowed_special="all"))
    pieces = shown["tokenizer.model.v1"][1]
    assert pieces[:3] == ["▁Hello", "▁w", "ör"] and "𝔸" in pieces  # ▁ kept, byte fallback as the character
    assert "".join(shown["cl100k_base"][1]) == TYPED
    assert all("bytes" in title for title in shown["cl100k_base"][2])  # hover shows ids and bytes


@needs_browser
def test_ids_on_demand(server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _type_and_read(browser, server, "ids please")
    assert not browser.find_elements(By.CSS_SELECTOR, "#tokens span.t sub")
    browser.find_element(By.CSS_SELECTOR, "#show-ids input").click()
    subs = WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#tokens span.t sub"))
    assert subs[0].get_attribute("textContent") == str(spm.SentencePieceProcessor(model_file=str(SP_V1))
                                                      .encode("ids please")[0])


def test_space_folder_holds_a_working_app(tmp_path, mix_tok_dir):
    space = tmp_path / "space"
    run_cli("app", "-t", SP_V1, "-t", f"cl100k_base:{CL100K}", "-t", mix_tok_dir, "--space", space)
    assert (space / "requirements.txt").read_text() == "hf_bbpe[app,sentencepiece]\n"
    assert "sdk: gradio" in (space / "README.md").read_text()
    assert (space / "tokenizers" / "2" / mix_tok_dir.name / "tokenizer.model").is_file()
    # the Space's app.py builds its page from the copied files alone
    code = ("import app, gradio; assert isinstance(app.demo, gradio.Blocks); "
            "print([t.name for t in app.loaded])")
    out = subprocess.run([sys.executable, "-c", code], cwd=space, capture_output=True, text=True, env=cli_env(),
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(["tokenizer.model.v1", "cl100k_base", mix_tok_dir.name])


def test_missing_gradio_extra_is_named(monkeypatch):
    from hf_bbpe.analysis.live_app import build_app

    monkeypatch.setitem(sys.modules, "gradio", None)  # as if the extra were not installed
    with pytest.raises(ImportError, match=r"hf_bbpe\[app\]"):
        build_app([])
