"""Kill saves for real, fast: a helper process that imports hf_bbpe, transformers and the CLI once,
then forks one child per save it is asked for; the child runs the save with the test hook
``HF_BBPE_TEST_KILL_AT`` naming the step at which it SIGKILLs itself (atomic_write.kill_point).

Run as ``python -m tests.support.killed_saves``; one JSON request a line on stdin
(``{"argv": [...]}``: the CLI; ``{"save_pretrained": MODEL, "folder": DIR}``: BBPETokenizer's
save_pretrained of the ``.model`` file MODEL; ``{"tok_save": MODEL, "prefix": P, "loop": N}``:
``Tokenizer.save`` of MODEL and of ``MODEL2`` alternately, N times; ``"env"`` for the child;
``"kill_after"``: seconds after the child starts saving, when the helper SIGKILLs it), one JSON line back:
``{"signal": n or null, "code": n or null}``. :class:`SaveKiller` drives it from a test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class SaveKiller:
    """The helper process, started once; :meth:`run` forks one save and says how it ended."""

    def __init__(self) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.killed_saves"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the save-killing helper died")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _save(request: dict, started: int) -> None:
    if "argv" in request:
        from hf_bbpe.cli.main import main

        main(request["argv"])
    elif "save_pretrained" in request:
        from hf_bbpe import Tokenizer
        from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

        BBPETokenizer.from_engine(Tokenizer.from_file(request["save_pretrained"])).save_pretrained(request["folder"])
    else:
        from hf_bbpe import Tokenizer

        toks = [Tokenizer.from_file(path) for path in request["tok_save"]]
        os.write(started, b"s")  # "kill_after" counts from here, whatever the machine's load
        for i in range(request.get("loop", 1)):
            toks[i % len(toks)].save(request["prefix"])


def serve() -> None:
    import hf_bbpe.cli.main  # noqa: F401  (imported once, before the forks)

    try:
        import hf_bbpe.hf.tokenization_bbpe  # noqa: F401  (and transformers)
    except ImportError:  # the engine's saves need neither
        pass

    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        started_r, started_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.environ.update(request.get("env", {}))
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                _save(request, started_w)
            except BaseException as exc:  # noqa: BLE001 - a child reports by exit status only
                print(repr(exc), file=sys.stderr)
                os._exit(3)
            os._exit(0)
        os.close(started_w)
        if "kill_after" in request:
            os.read(started_r, 1)
            time.sleep(request["kill_after"])
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.close(started_r)
        result = {"signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                  "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    serve()
