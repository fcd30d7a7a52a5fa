"""`hf-bbpe push` through the real huggingface_hub client, against a small local Hub server.

The machines have no internet, so the test serves the three calls an upload makes (create repo,
preupload, commit; plus the README lookup) on 127.0.0.1 and checks that the committed files are a
save_pretrained folder that loads with the same ids, with a model card the Hub can read (a
README.md of the folder is kept, given the metadata it lacks, and the command says so).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from huggingface_hub import ModelCard
from huggingface_hub.repocard import metadata_load

from hf_bbpe import Tokenizer
from tests.support.cli import CLI, MIX, cli_env, run_cli



class FakeHub(BaseHTTPRequestHandler):
    commits: list[dict] = []
    created: list[dict] = []

    def log_message(self, *args) -> None:
        pass

    def _json(self, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def do_HEAD(self) -> None:  # README.md lookups: the repo is new
        self._json(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"})

    do_GET = do_HEAD

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/api/validate-yaml":  # the model card transformers writes
            self._json(200, {})
        elif self.path == "/api/repos/create":
            request = json.loads(body)
            FakeHub.created.append(request)
            repo = f"{request.get('organization') or 'me'}/{request['name']}"
            self._json(200, {"url": f"http://{self.headers['Host']}/{repo}"})
        elif "/preupload/" in self.path:
            files = json.loads(body)["files"]
            self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                       for f in files]})
        elif "/commit/" in self.path:
            lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
            files = {v["value"]["path"]: base64.b64decode(v["value"]["content"]) for v in lines if v["key"] == "file"}
            header = next(v["value"] for v in lines if v["key"] == "header")
            FakeHub.commits.append({"path": self.path, "files": files, "summary": header.get("summary")})
            repo = self.path.split("/api/models/" if "/api/models/" in self.path else "/api/spaces/")[1] \
                .split("/commit/")[0]
            self._json(200, {"commitUrl": f"http://{self.headers['Host']}/{repo}/commit/{'1' * 40}", "commitOid": "1" * 40,
                             "pullRequestUrl": None})
        else:
            self._json(404, {"error": f"unexpected {self.path}"})


@pytest.fixture()
def hub():
    FakeHub.commits, FakeHub.created = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_push_commits_a_loadable_folder(hub, mix_tok_dir, tmp_path):
    env = cli_env()
    env.pop("HF_HUB_OFFLINE", None)
    env.update({"HF_ENDPOINT": hub, "HF_TOKEN": "hf_test_token", "HF_HOME": str(tmp_path / "hf-home")})
    proc = subprocess.run(CLI + ["push", str(mix_tok_dir), "me/mix512", "--message", "first tokenizer",
                                 "--license", "mit", "--tag", "german"], capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr.decode().splitlines()[-1] == ("model card: wrote a model card (library_name, tags, license, "
                                                     "pipeline_tag)")
    assert FakeHub.created and FakeHub.created[0]["name"] == "mix512"
    (commit,) = FakeHub.commits
    assert commit["path"].startswith("/api/models/me/mix512/commit/main")
    assert commit["summary"] == "first tokenizer"
    files = commit["files"]
    assert {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"} <= set(files)
    assert not [name for name in files if name.endswith(".py")]  # a standard folder: no code unless --remote-code
    (tmp_path / "README.md").write_bytes(files["README.md"])
    metadata = metadata_load(tmp_path / "README.md")
    assert metadata == {"library_name": "transformers", "license": "mit", "pipeline_tag": "text-generation",
                        "tags": ["tokenizer", "bpe", "byte-level-bpe", "hf_bbpe", "german"]}
    assert 'AutoTokenizer.from_pretrained("me/mix512")' in files["README.md"].decode()

    # what was committed loads, with the engine's ids
    folder = tmp_path / "pulled"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    from transformers import AutoTokenizer

    text = MIX.read_text(encoding="utf-8")[:5000]
    expected = Tokenizer.from_file(mix_tok_dir / "tokenizer.model").encode_ordinary(text)
    assert AutoTokenizer.from_pretrained(str(folder))(text)["input_ids"] == expected


def test_push_keeps_the_folders_readme_and_says_so(hub, mix_tok_dir, tmp_path):
    folder = tmp_path / "tok"
    shutil.copytree(mix_tok_dir, folder)
    readme = "---\nlicense: apache-2.0\n---\n# Mix tokenizer\n\nTrained on the sample.\n"
    (folder / "README.md").write_text(readme, encoding="utf-8")
    env = cli_env()
    env.pop("HF_HUB_OFFLINE", None)
    env.update({"HF_ENDPOINT": hub, "HF_TOKEN": "hf_test_token", "HF_HOME": str(tmp_path / "hf-home")})
    proc = subprocess.run(CLI + ["push", str(folder), "me/mix512"], capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr.decode().splitlines()[-1] == (f"model card: kept {folder / 'README.md'}, added metadata: "
                                                     "library_name, tags, pipeline_tag")
    assert (folder / "README.md").read_text(encoding="utf-8") == readme  # the folder is left as it was
    (commit,) = FakeHub.commits
    card = ModelCard(commit["files"]["README.md"].decode())
    assert card.text.strip() == "# Mix tokenizer\n\nTrained on the sample."
    assert card.data.license == "apache-2.0" and card.data.library_name == "transformers"


def test_push_uploads_an_app_space_folder(hub, mix_tok_dir, tmp_path):
    space = tmp_path / "space"
    run_cli("app", "-t", mix_tok_dir, "--space", space)
    env = cli_env()
    env.pop("HF_HUB_OFFLINE", None)
    env.update({"HF_ENDPOINT": hub, "HF_TOKEN": "hf_test_token", "HF_HOME": str(tmp_path / "hf-home")})
    proc = subprocess.run(CLI + ["push", str(space), "me/live-tok"], capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    (created,) = FakeHub.created
    assert created["name"] == "live-tok" and created["type"] == "space" and created["sdk"] == "gradio"
    (commit,) = FakeHub.commits
    assert commit["path"].startswith("/api/spaces/me/live-tok/commit/main")
    expected = {p.relative_to(space).as_posix(): p.read_bytes() for p in space.rglob("*") if p.is_file()}
    assert commit["files"] == expected


def test_push_bad_tokenizer_is_a_one_line_error(tmp_path):
    proc = run_cli("push", tmp_path / "nope", "me/x", check=False)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert b"no such file" in proc.stderr
