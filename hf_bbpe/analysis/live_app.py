"""A tiktokenizer-style live page: type text, see every tokenizer's tokens update as you type.

Built on Gradio (an optional extra, ``pip install 'hf_bbpe[app]'``, imported only here and only
when the app is built). Each tokenizer is drawn by :func:`~hf_bbpe.analysis.token_view.render_section`,
the HTML view's own rendering: coloured pieces, bytes and ids on hover, counts, ids on demand.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from .foreign_tokenizers import ViewTokenizer
from .token_view import VIEW_CSS, render_section, tokenize_for_view

APP_EXTRA = "app"
EXAMPLE_TEXT = "Hello world! Tokenization is at the heart of LLMs. 你好，世界 🙂\n\ndef f(x):\n    return x ** 2\n"
MAX_CHARS = 20_000  # tokens drawn per tokenizer; counts are always the whole text's
_GRID_CSS = ".tokenizer-grid { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(280px, 1fr)); }"


def import_gradio():
    """The ``gradio`` module, or an ImportError naming the extra that installs it."""
    try:
        import gradio
    except ImportError:
        raise ImportError(f"the live app needs Gradio: pip install 'hf_bbpe[{APP_EXTRA}]'") from None
    return gradio


def render_all(tokenizers: Sequence[tuple[str, ViewTokenizer]], text: str, show_ids: bool = False) -> str:
    """Every tokenizer's section for ``text``, side by side (the live app's output)."""
    sections = [render_section(tokenize_for_view(tok, name, text), show_ids=show_ids, max_chars=MAX_CHARS)
                for name, tok in tokenizers]
    return f'<div class="tokenizer-grid">{"".join(sections)}</div>'


def build_app(tokenizers: Sequence[tuple[str, ViewTokenizer]], *, title: str = "hf-bbpe live tokenizer",
              text: str = EXAMPLE_TEXT):
    """A ``gradio.Blocks`` app: a text box and a checkbox for ids; every keystroke re-renders all
    tokenizers. Launch it with ``app.launch(css=APP_CSS)``."""
    gr = import_gradio()
    with gr.Blocks(title=title) as app:
        gr.Markdown(f"## {html.escape(title)}\nType or paste text; hover a token for its ids and bytes.")
        box = gr.Textbox(value=text, lines=6, label="text", elem_id="text-input", autofocus=True)
        ids = gr.Checkbox(value=False, label="show ids", elem_id="show-ids")
        out = gr.HTML(render_all(tokenizers, text), elem_id="tokens")

        def update(value: str, show_ids: bool) -> str:
            return render_all(tokenizers, value or "", show_ids)

        box.input(update, [box, ids], out, trigger_mode="always_last", show_progress="hidden", queue=False)
        ids.change(update, [box, ids], out, show_progress="hidden", queue=False)
    return app


APP_CSS = VIEW_CSS.replace(":root { color-scheme: light; }", "").replace(
    "body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1a1a1a; background: #fff; }", ""
) + _GRID_CSS
