"""hiredis's C sources for builds without a system hiredis: the copy that PyPI's `hiredis` sdist
bundles (vendor/hiredis), fetched with pip at build time and checked against a pinned SHA-256.
redlease uses hiredis only to parse replies; nothing of hiredis is committed to this repository.

    python3 tools/hiredis_source.py DIR   unpacks into DIR/hiredis (include DIR), prints DIR

REDLEASE_HIREDIS_SDIST=/path/to/hiredis-3.5.0.tar.gz uses that file instead of fetching (offline
builds); it must still match the pinned hash.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

VERSION = "3.5.0"  # the PyPI package; it bundles hiredis (C) 1.5.0
SHA256 = "c227592cc56b7df247abe4755c26723965be68972be2149fa441ac33d82131ba"
# what a build compiles: the reply reader and freeReplyObject need hiredis.c, which needs the rest
SOURCES = ("alloc.c", "async.c", "hiredis.c", "net.c", "read.c", "sds.c", "sockcompat.c")


class Unavailable(Exception):
    """The sdist could not be fetched or does not match the pinned hash."""


def _fetch(into):
    local = os.environ.get("REDLEASE_HIREDIS_SDIST")
    if local:
        if not os.path.isfile(local):
            raise Unavailable(f"REDLEASE_HIREDIS_SDIST={local} is not a file")
        return local
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--no-binary", ":all:", f"hiredis=={VERSION}", "-d", into]
    result = subprocess.run(command, capture_output=True, text=True)
    found = [f for f in os.listdir(into) if f.endswith(".tar.gz")]
    if result.returncode != 0 or len(found) != 1:
        last = (result.stderr.strip().splitlines() or ["no archive"])[-1]
        raise Unavailable(f"pip could not fetch hiredis=={VERSION} from PyPI ({last})")
    return os.path.join(into, found[0])


def _check_hash(archive):
    with open(archive, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != SHA256:
        raise Unavailable(f"{archive}: SHA-256 {digest}, expected {SHA256}")


def unpack(dest):
    """Makes dest/hiredis hold the C sources; returns the include directory (dest)."""
    target = os.path.join(dest, "hiredis")
    if os.path.isfile(os.path.join(target, "read.c")):
        return dest
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        archive = _fetch(tmp)
        _check_hash(archive)
        prefix = f"hiredis-{VERSION}/vendor/hiredis/"
        with tarfile.open(archive) as tar:
            staging = os.path.join(tmp, "hiredis")
            os.makedirs(staging)
            for m in tar.getmembers():
                name = m.name[len(prefix):]
                if m.name.startswith(prefix) and m.isfile() and "/" not in name:
                    with tar.extractfile(m) as src, open(os.path.join(staging, name), "wb") as out:
                        shutil.copyfileobj(src, out)
        shutil.rmtree(target, ignore_errors=True)
        os.rename(staging, target)
    return dest


def reader_sources(include_dir):
    """The .c files a build compiles in (those this hiredis version has)."""
    paths = [os.path.join(include_dir, "hiredis", name) for name in SOURCES]
    return [p for p in paths if os.path.isfile(p)]


if __name__ == "__main__":
    try:
        print(unpack(sys.argv[1]))
    except Unavailable as e:
        sys.exit(f"hiredis_source: {e}")
