"""Build the 1 GB real-text training corpus of scripts/bench_train.py from Debian packages.

    python scripts/make_train_corpus.py OUT_DIR [--any-version] [--cap-scale 1.0]

Every byte is real text that people wrote: source code (Linux 6.1, GCC 12, Go 1.19's and Rust
1.63's standard libraries and tools, OpenJDK 17's class library, Perl's modules, Emacs Lisp), its
documentation (kernel docs, texinfo, the Python 3.11 docs' reST sources, the Debian
Administrator's Handbook in 26 languages) and natural language (man pages in thirteen
languages, WordNet's glosses, a German-English dictionary). Nothing is generated.

Steps, all in OUT_DIR (nothing is committed; 1.2 GB of corpus beside 0.4 GB of packages):

1. ``apt-get download`` each package at the version pinned in SOURCES into ``debs/`` (a .deb
   already there is reused, so a second run is offline); ``--any-version`` takes the archive's
   current version instead when a pinned one has left it (the manifest records what went in).
2. Each .deb's files are streamed (``dpkg-deb --fsys-tarfile``; nothing is unpacked on disk); the
   source tarball or src.zip a package ships is read in place of itself; ``*.gz`` files (man
   pages, ``.el.gz``) are read decompressed.
3. A file is kept when it is valid UTF-8, holds no NUL byte and is at most 2 MB (larger ones are
   mostly generated tables; the two dictionaries' files may be 30 MB). Of a source's kept files, those first in the order of
   ``sha256(path inside the package)`` are taken up to the source's cap: a fixed and varied
   sample, rather than the first directories in alphabetical order.
4. ``corpus.txt``: the taken files (in package order), each ending in ``\\n``. Documents are lines
   (see bench_train.py). ``manifest.json`` records every package's version and .deb sha256, the
   files and bytes each source gave, and the corpus's size and sha256; the same lines are printed.

Same package versions -> the same corpus, byte for byte.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
import zlib
from dataclasses import dataclass

MB = 1_000_000
MAX_FILE_BYTES = 2 * MB  # larger files are mostly generated tables (register maps, test vectors)
MIN_CORPUS_BYTES = 1 << 30


@dataclass(frozen=True)
class Source:
    package: str
    version: str
    cap_mb: float  # at most this many MB of text from this package
    what: str
    max_file_mb: float = MAX_FILE_BYTES / MB  # a dictionary is one large file of real text


MAN_LANGUAGES = ("de", "fr", "ru", "ja", "pl", "es", "it", "nl", "pt-br", "zh", "uk", "ro", "cs")

SOURCES = (
    Source("linux-source-6.1", "6.1.192-2", 430, "Linux 6.1: C, headers, Kconfig, kernel docs and their translations"),
    Source("gcc-12-source", "12.2.0-14+deb12u1", 230, "GCC 12: C, C++, Ada, Fortran, D, Go, texinfo, .po translations"),
    Source("golang-1.19-src", "1.19.8-2", 90, "Go 1.19 standard library, compiler and tests"),
    Source("openjdk-17-source", "17.0.21.1+2-1~deb12u1", 90, "OpenJDK 17 class library (Java, javadoc)"),
    Source("rust-src", "1.63.0+dfsg1-2", 70, "Rust 1.63 standard library, compiler sources, docs"),
    Source("emacs-el", "1:28.2+1-15+deb12u4", 50, "Emacs 28 Lisp sources"),
    Source("perl-modules-5.36", "5.36.0-7+deb12u4", 20, "Perl 5.36 core modules and POD"),
    Source("python3.11-doc", "3.11.2-6+deb12u9", 40, "Python 3.11 documentation (HTML and reST sources)"),
    Source("debian-handbook", "11.20220922", 80, "Debian Administrator's Handbook in 26 languages (HTML)"),
    *(
        Source(f"manpages-{lang}", "1:4.18.1-1" if lang == "pl" else "4.18.1-1", 30, f"manual pages ({lang})")
        for lang in MAN_LANGUAGES
        if lang not in ("ja", "zh")
    ),
    Source("manpages-ja", "0.5.0.0.20221215+dfsg-1", 30, "manual pages (ja)"),
    Source("manpages-zh", "1.6.4.0-1", 30, "manual pages (zh)"),
    Source("wordnet-base", "1:3.0-37", 30, "WordNet 3.0 database: English glosses", max_file_mb=30),
    Source("trans-de-en", "1.9-6", 30, "German-English dictionary (ding)", max_file_mb=30),
)

ARCHIVE_SUFFIXES = (".tar.xz", ".tar.gz", ".tgz", ".tar.bz2", ".zip")
NESTED_MIN_BYTES = 10 * MB


def run(cmd: list[str], cwd: str | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr.strip()}")
    return done.stdout


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 24), b""))


def deb_name(package: str, version: str) -> str:
    """The file name apt-get download gives (an epoch's ':' becomes '%3a')."""
    return f"{package}_{version.replace(':', '%3a')}_all.deb"


def fetch_deb(source: Source, debs: str, any_version: bool) -> tuple[str, str]:
    """(path of the .deb, version): the pinned version, downloaded unless already in ``debs``."""
    for version in (source.version,) + (("",) if any_version else ()):
        if version:
            for arch in ("all", "amd64"):
                path = os.path.join(debs, deb_name(source.package, version).replace("_all.deb", f"_{arch}.deb"))
                if os.path.exists(path):
                    return path, version
        before = set(os.listdir(debs))
        spec = f"{source.package}={version}" if version else source.package
        done = subprocess.run(["apt-get", "download", spec], cwd=debs, capture_output=True, text=True)
        new = sorted(set(os.listdir(debs)) - before)
        if done.returncode == 0 and new:
            path = os.path.join(debs, new[0])
            got = run(["dpkg-deb", "-f", path, "Version"]).strip()
            if version and got != version:
                raise SystemExit(f"apt-get download {spec} gave version {got}")
            return path, got
        if not any_version:
            raise SystemExit(
                f"{source.package} {source.version} cannot be downloaded ({done.stderr.strip().splitlines()[-1:]}); "
                "the archive may have moved on: rerun with --any-version (the manifest records the version used)"
            )
    raise SystemExit(f"{source.package}: no version can be downloaded")


def members(deb: str):
    """(path, bytes) of every regular file of the .deb, streamed (nothing is unpacked on disk).

    A shipped archive of at least NESTED_MIN_BYTES (the package's source tarball, OpenJDK's
    src.zip) is read in place of itself: its files come as ``<archive path>!/<path inside>``.
    Smaller archives are test data and are left alone.
    """
    dpkg = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=dpkg.stdout, mode="r|") as outer:
            for member in outer:
                if not member.isfile():
                    continue
                name = member.name.removeprefix("./")
                data = outer.extractfile(member)
                if member.size >= NESTED_MIN_BYTES and name.endswith(ARCHIVE_SUFFIXES):
                    if name.endswith(".zip"):
                        with zipfile.ZipFile(io.BytesIO(data.read())) as z:
                            for info in z.infolist():
                                if not info.is_dir():
                                    yield f"{name}!/{info.filename}", info.file_size, lambda i=info, z=z: z.read(i)
                    else:
                        with tarfile.open(fileobj=data, mode="r|*") as inner:
                            for m in inner:
                                if m.isfile():
                                    f = inner.extractfile(m)
                                    yield f"{name}!/{m.name.removeprefix('./')}", m.size, f.read
                else:
                    yield name, member.size, data.read
    finally:
        dpkg.stdout.close()
        if dpkg.wait() not in (0, -13):  # -13: SIGPIPE when the caller stops early
            raise SystemExit(f"dpkg-deb --fsys-tarfile {deb} failed")


def sample_key(path: str) -> bytes:
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).digest()


def text_of(name: str, size: int, read, max_bytes: int = MAX_FILE_BYTES) -> bytes | None:
    """The file's bytes (decompressed if .gz) when they are real text we keep, else None."""
    if size > max_bytes:
        return None
    data = read()
    if name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return None
    if not data or len(data) > max_bytes or b"\0" in data:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data if data.endswith(b"\n") else data + b"\n"


def select(deb: str, cap: int, max_bytes: int) -> tuple[set[str], int]:
    """The files a source gives: kept files in sha256(path) order until ``cap`` bytes; and how
    many files were not text. One pass over the package that reads every file."""
    kept = []
    rejected = 0
    for name, size, read in members(deb):
        data = text_of(name, size, read, max_bytes)
        if data is None:
            rejected += 1
        else:
            kept.append((sample_key(name), len(data), name))
    kept.sort()
    chosen, total = set(), 0
    for _, size, name in kept:
        if total >= cap:
            break
        chosen.add(name)
        total += size
    return chosen, rejected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--any-version", action="store_true", help="use the archive's version where a pinned one is gone")
    parser.add_argument("--cap-scale", type=float, default=1.0, help="scale every source's cap (a small test corpus)")
    args = parser.parse_args()

    out = os.path.abspath(args.out_dir)
    debs = os.path.join(out, "debs")
    os.makedirs(debs, exist_ok=True)
    corpus_path = os.path.join(out, "corpus.txt")
    partial = corpus_path + ".partial"
    manifest = {"sources": [], "max_file_bytes": MAX_FILE_BYTES, "cap_scale": args.cap_scale}
    start = time.time()
    with open(partial, "wb") as corpus:
        for source in SOURCES:
            deb, version = fetch_deb(source, debs, args.any_version)
            cap = int(source.cap_mb * MB * args.cap_scale)
            max_bytes = int(source.max_file_mb * MB)
            chosen, skipped = select(deb, cap, max_bytes)
            taken = size = 0
            for name, n, read in members(deb):  # second pass: the chosen files, in the package's order
                if name in chosen:
                    data = text_of(name, n, read, max_bytes)
                    corpus.write(data)
                    size += len(data)
                    taken += 1
            entry = {
                "package": source.package, "version": version, "deb_sha256": sha256_file(deb),
                "what": source.what, "cap_bytes": cap, "max_file_bytes": max_bytes, "bytes": size, "files": taken, "files_skipped": skipped,
            }
            manifest["sources"].append(entry)
            print(f"{source.package:20s} {version:26s} {size / MB:7.1f} MB from {taken:6d} files"
                  f" ({skipped} skipped: binary, not UTF-8 or too large)  [{time.time() - start:.0f} s]", flush=True)
    manifest["bytes"] = os.path.getsize(partial)
    manifest["sha256"] = sha256_file(partial)
    manifest["lines"] = count_lines(partial)
    os.replace(partial, corpus_path)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"\n{corpus_path}: {manifest['bytes']:,} bytes ({manifest['bytes'] / (1 << 30):.2f} GiB), "
          f"{manifest['lines']:,} lines, sha256 {manifest['sha256']}")
    print(f"manifest: {os.path.join(out, 'manifest.json')}")
    if args.cap_scale >= 1 and manifest["bytes"] < MIN_CORPUS_BYTES:
        sys.exit(f"the corpus is smaller than 1 GiB ({manifest['bytes']:,} bytes): raise the caps")


if __name__ == "__main__":
    main()
