"""``push_to_hub`` goes through transformers' PushToHubMixin and the real huggingface_hub client
(save_pretrained(push_to_hub=True) and push_to_hub), against a small Hub served by the test on 127.0.0.1.

The server answers what the client asks: create repo, validate the model card's YAML, preupload
(every file "regular", so its bytes travel base64 in the commit), commit (NDJSON), then repo info
and file downloads so the pushed repo can be loaded back. The client runs in subprocesses
because huggingface_hub reads ``HF_ENDPOINT`` when it is imported. The committed files must be
exactly what the load paths download, plus the model card (README.md), which must parse as the
Hub parses it, carry the metadata the Hub reads and a "Use in Transformers" snippet that runs;
a card already in the repository keeps its text. Runs on 5.x and 4.57.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.support.hf import EOT, load_elsewhere, mix_docs, run_python, trained_engine

from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat

REPO_ID = "someone/bbpe-tok"
COMMIT = "c0ffee" + "0" * 34


class LocalHub:
    """An in-memory model repository behind the endpoints huggingface_hub uses."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.commits = 0
        self.downloaded: set[str] = set()
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                hub.requests.append(f"POST {self.path}")
                hub.post(self, body)

            def do_GET(self):
                hub.requests.append(f"GET {self.path}")
                hub.get(self, send_body=True)

            def do_HEAD(self):
                hub.requests.append(f"HEAD {self.path}")
                hub.get(self, send_body=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LocalHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def reply(handler, status: int, payload: bytes, headers: dict | None = None, send_body: bool = True) -> None:
        handler.send_response(status)
        for key, value in {"Content-Length": str(len(payload)), **(headers or {})}.items():
            handler.send_header(key, value)
        handler.end_headers()
        if send_body:
            handler.wfile.write(payload)

    def reply_json(self, handler, obj, status: int = 200, headers: dict | None = None, send_body: bool = True) -> None:
        self.reply(handler, status, json.dumps(obj).encode(), {"Content-Type": "application/json", **(headers or {})},
                   send_body)

    def post(self, handler, body: bytes) -> None:
        path = handler.path.split("?")[0]
        if path == "/api/repos/create":
            request = json.loads(body)
            assert f"{request['organization']}/{request['name']}" == REPO_ID
            self.reply_json(handler, {"url": f"{self.url}/{REPO_ID}", "name": REPO_ID})
        elif path == "/api/validate-yaml":
            self.reply_json(handler, {"errors": [], "warnings": []})
        elif path == f"/api/models/{REPO_ID}/preupload/main":
            files = json.loads(body)["files"]
            self.reply_json(handler, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                                for f in files]})
        elif path == f"/api/models/{REPO_ID}/commit/main":
            for line in body.decode().splitlines():
                item = json.loads(line)
                if item["key"] == "file":
                    value = item["value"]
                    assert value["encoding"] == "base64"
                    self.files[value["path"]] = base64.b64decode(value["content"])
                elif item["key"] != "header":
                    raise AssertionError(f"unexpected commit operation {item['key']}")
            self.commits += 1
            self.reply_json(handler, {"commitUrl": f"{self.url}/{REPO_ID}/commit/{COMMIT}", "commitOid": COMMIT})
        else:
            self.reply_json(handler, {"error": f"no such endpoint {path}"}, status=404)

    def get(self, handler, send_body: bool) -> None:
        path = handler.path.split("?")[0]
        if path in (f"/api/models/{REPO_ID}", f"/api/models/{REPO_ID}/revision/main"):
            self.reply_json(handler, {"id": REPO_ID, "sha": COMMIT,
                                      "siblings": [{"rfilename": name} for name in sorted(self.files)]},
                            send_body=send_body)
            return
        prefix = f"/{REPO_ID}/resolve/"
        if path.startswith(prefix):
            name = path[len(prefix):].split("/", 1)[1]
            if name in self.files:
                data = self.files[name]
                if send_body:
                    self.downloaded.add(name)
                self.reply(handler, 200, data, {"ETag": f'"{hashlib.sha1(data).hexdigest()}"',
                                                "X-Repo-Commit": COMMIT}, send_body)
                return
        self.reply_json(handler, {"error": "Entry not found"}, status=404,
                        headers={"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT}, send_body=send_body)


def test_push_to_hub_commits_exactly_what_loading_needs(tmp_path):
    docs = mix_docs()[:80] + [f"a{EOT}b <x>"]
    text_file = tmp_path / "docs.json"
    text_file.write_text(json.dumps(docs), encoding="utf-8")
    hf = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, pad_token="<|pad|>")
    hf.add_tokens(["<x>"])
    expected = [hf(doc)["input_ids"] for doc in docs]
    local = tmp_path / "local"
    hf.save_pretrained(local)
    with LocalHub() as hub:
        env = {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_local_test_token",
               "HF_HUB_DOWNLOAD_TIMEOUT": "30", "HF_HUB_ETAG_TIMEOUT": "30"}
        out = run_python(
            f"""
            import json
            from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
            hf = BBPETokenizer.from_pretrained({str(local)!r})
            print(json.dumps(str(hf.push_to_hub({REPO_ID!r}, commit_message="add tokenizer", license="mit",
                                                base_model="meta-llama/Meta-Llama-3-8B", tags=["german"]))))
            again = BBPETokenizer.from_pretrained({REPO_ID!r})
            print(json.dumps([again(doc)["input_ids"] for doc in {docs!r}]))
            """,
            tmp_path, block_hf_bbpe=False, env=env)
        commit_url, pulled_ids = (json.loads(line) for line in out.splitlines()[-2:])
        assert hub.commits == 1 and commit_url.endswith(COMMIT)
        assert pulled_ids == expected  # a: BBPETokenizer.from_pretrained from the Hub
        elsewhere = load_elsewhere(REPO_ID, text_file, tmp_path, env=env)
        assert elsewhere["plain"]["ids"] == expected  # c: the tokenizer.json twin, no hf_bbpe
        assert elsewhere["remote"]["class"] in ("PreTrainedTokenizerFast", "TokenizersBackend")  # d: no code pushed
        assert elsewhere["remote"]["ids"] == expected
        assert elsewhere["remote_slow"]["ids"] == expected

        # the card's "Use in Transformers" snippet runs as written, where hf_bbpe cannot be imported
        snippet = hub.files["README.md"].decode().split("```python\n", 1)[1].split("```", 1)[0]
        out = run_python(snippet, tmp_path, block_hf_bbpe=True, env=env)
        assert json.loads(out.splitlines()[-1]) == BBPETokenizer.from_pretrained(local)("Hello world")["input_ids"]

    saved = {path.name for path in local.iterdir()}
    assert set(hub.files) == saved | {"README.md"}  # the model card is push_to_hub's own addition
    _check_card(hub.files["README.md"], tmp_path, license="mit", base_model="meta-llama/Meta-Llama-3-8B",
                extra_tags=["german"])
    for name in saved:
        assert hub.files[name] == (local / name).read_bytes(), name
    assert hub.downloaded == saved, "every pushed file is needed by a load path, and nothing else was fetched"
    assert json.loads(hub.files["tokenizer_config.json"])["tokenizer_class"] == "PreTrainedTokenizerFast"


def _check_card(data: bytes, tmp_path: Path, license: str | None = None, base_model: str | None = None,
                extra_tags: list[str] = ()) -> str:
    """The pushed README.md parses as the Hub parses it (huggingface_hub's ModelCard and
    metadata_load) and carries the metadata the Hub reads; returns its text."""
    from huggingface_hub import ModelCard
    from huggingface_hub.repocard import metadata_load

    path = tmp_path / "README.md"
    path.write_bytes(data)
    metadata = metadata_load(path)
    assert metadata["library_name"] == "transformers" and metadata["pipeline_tag"] == "text-generation"
    assert metadata["tags"] == ["tokenizer", "bpe", "byte-level-bpe", "hf_bbpe", *extra_tags]
    assert metadata.get("license") == license and metadata.get("base_model") == base_model
    card = ModelCard.load(path)
    assert card.data.to_dict() == metadata
    assert "## Use in Transformers" in card.text and f'AutoTokenizer.from_pretrained("{REPO_ID}")' in card.text
    return card.text


def test_an_existing_card_keeps_its_text_and_gets_the_metadata_it_lacks(tmp_path):
    hf = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT)
    hf.save_pretrained(tmp_path / "local")
    with LocalHub() as hub:
        hub.files["README.md"] = b"---\nlicense: apache-2.0\ntags:\n- mine\n---\n# My tokenizer\n\nWritten by hand.\n"
        env = {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_local_test_token",
               "HF_HUB_DOWNLOAD_TIMEOUT": "30", "HF_HUB_ETAG_TIMEOUT": "30"}
        run_python(
            f"""
            from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
            BBPETokenizer.from_pretrained({str(tmp_path / "local")!r}).push_to_hub({REPO_ID!r}, license="mit")
            """,
            tmp_path, block_hf_bbpe=False, env=env)
    from huggingface_hub import ModelCard

    card = ModelCard(hub.files["README.md"].decode())
    assert card.text.strip() == "# My tokenizer\n\nWritten by hand."
    assert card.data.license == "apache-2.0"  # the card's own value stays
    assert card.data.tags == ["mine", "tokenizer", "bpe", "byte-level-bpe", "hf_bbpe"]
    assert card.data.library_name == "transformers" and card.data.pipeline_tag == "text-generation"


def test_save_pretrained_with_push_to_hub_pushes_the_rewritten_config(tmp_path):
    with LocalHub() as hub:
        env = {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_local_test_token",
               "HF_HUB_DOWNLOAD_TIMEOUT": "30", "HF_HUB_ETAG_TIMEOUT": "30"}
        run_python(
            f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
            from tests.support.hf import trained_engine
            from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
            BBPETokenizer.from_engine(trained_engine()).save_pretrained({str(tmp_path / 'bbpe-tok')!r},
                                                                        push_to_hub=True, repo_id={REPO_ID!r})
            """,
            tmp_path, block_hf_bbpe=False, env=env)
    config = json.loads(hub.files["tokenizer_config.json"])
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast" and "pattern" in config
    assert hub.files["tokenizer_config.json"] == (tmp_path / "bbpe-tok" / "tokenizer_config.json").read_bytes()
    _check_card(hub.files["README.md"], tmp_path)
