"""A text file that shrinks or grows while it is counted is an error naming it, on the C path and
on its Python twin: its counts would be of no one version of the file. (A file that shrank while
the C kernel read a paragraph or the whole file once made a counting thread spin forever, without
the GIL, so that Ctrl-C could not stop it.)

The change is real: another thread truncates a real file (sparse, so large but cheap) at a random
moment while counting runs, in a child process that the test kills if it hangs; attempts go on
until one lands inside the call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hf_bbpe
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS
from hf_bbpe.engine.training.text_files import iter_file_documents

ROOT = Path(hf_bbpe.__file__).resolve().parents[1]

# the child: for each (docs, change), counts a 16 MB sparse file (one line of NULs, or lines of them)
# while a thread changes its size after a random delay within one unchanged count's time, until an
# attempt gets an error; prints what each case ended with
CHILD = textwrap.dedent("""
    import json, os, random, sys, threading, time
    from hf_bbpe.engine.training.counting import count_native
    from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS

    path, cases = sys.argv[1], json.loads(sys.argv[2])
    size = 16 << 20
    rng = random.Random(0)
    results = {}

    def make(lines):
        with open(path, "wb") as handle:
            handle.truncate(size)
            if lines:
                for at in range(1 << 20, size, 1 << 20):
                    handle.seek(at)
                    handle.write(b"\\n")

    def count(docs):
        return count_native(None, NATIVE_PATTERNS["gpt2"], files=[path], docs=docs, num_threads=2, progress=False)

    for docs, change in cases:
        lines = docs != "file"
        make(lines)
        started = time.perf_counter()
        count(docs)
        took = time.perf_counter() - started
        outcome = None
        for attempt in range(60):
            make(lines)
            delay = rng.uniform(0, took / 20 if attempt % 2 else took)  # (often while it reads)
            changer = threading.Timer(delay, os.truncate, (path, size // 3 if change == "shrink" else 2 * size))
            changer.start()
            try:
                count(docs)
            except ValueError as exc:
                outcome = str(exc)
                break
            finally:
                changer.join()
        results[f"{docs} {change}"] = outcome
    print(json.dumps(results))
""")

CASES = [[docs, change] for docs in ("file", "paragraph", "line") for change in ("shrink", "grow")]


@pytest.mark.slow
def test_a_file_that_changes_while_the_kernel_reads_it_is_an_error_naming_it(tmp_path):
    path = tmp_path / "changing.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        child = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(CASES)], env=env,
                               capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("counting a file that changed while it was read hung")
    assert child.returncode == 0, child.stderr
    results = json.loads(child.stdout)
    for case, message in results.items():
        assert message is not None, f"{case}: no attempt of 60 was refused"
        assert message.startswith(f"{path}: changed while it was read ("), (case, message)
        assert message.endswith("now); count it again once nothing writes to it"), (case, message)


def test_the_twin_refuses_a_file_that_changes_while_it_reads_it(tmp_path):
    path = tmp_path / "changing.txt"
    for docs, change, now in [("line", b"one\n", 4), ("paragraph", b"one\n\ntwo\nthree\nfour\n", 20)]:
        path.write_bytes(b"one\n\ntwo\nthree\n")
        documents = iter_file_documents([str(path)], docs=docs)
        next(documents)
        path.write_bytes(change)
        with pytest.raises(ValueError) as caught:
            list(documents)
        assert str(caught.value) == (f"{path}: changed while it was read (15 bytes when counting began, {now} now); "
                                     "count it again once nothing writes to it")

