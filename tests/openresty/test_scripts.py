"""One source of scripts: the backend's scripts.lua is what tools/gen_resty_scripts.c prints
from the C core's texts, and Redis sees byte-identical script texts (same SHA1s) from the C rock
and from the backend."""

import hashlib
import os
import re
import subprocess

from nginx import ROOT

from kit import Listener
from luapeer import LuaPeer
from test_wire import parse

SCRIPTS = os.path.join(ROOT, "luarocks", "redlease", "resty", "scripts.lua")


def test_committed_scripts_are_what_the_generator_prints():
    gen = os.environ.get("REDLEASE_GEN_SCRIPTS", os.path.join(ROOT, "build", "gen_resty_scripts"))
    printed = subprocess.run([gen], check=True, capture_output=True).stdout
    with open(SCRIPTS, "rb") as f:
        committed = f.read()
    assert committed == printed, "scripts.lua is stale: run `make resty-scripts`"
    names = re.findall(rb"^  ([a-z_]+) =$", printed, re.M)  # one per script of the catalogue
    assert len(names) >= 14 and len(set(names)) == len(names)


def loaded_texts(monitor, start, end):
    """The texts of SCRIPT LOAD commands seen between two marks."""
    texts = []
    for line in monitor.between(start, end):
        source, args = parse(line)
        if source != "lua" and len(args) == 3 and args[0].upper() == b"SCRIPT" \
                and args[1].upper() == b"LOAD":
            texts.append(args[2])
    return texts


def test_both_sides_load_the_same_script_texts(server, raw, make_nginx):
    ng = make_nginx()
    peer = LuaPeer(server.url)
    monitor = Listener(server.url, "MONITOR")
    try:
        monitor.mark("start")
        raw("SCRIPT", "FLUSH")
        assert peer.acquire("texts:c", lease=5)  # the C rock loads every script first
        monitor.mark("c")
        c_texts = loaded_texts(monitor, "start", "c")
        raw("SCRIPT", "FLUSH")
        assert ng.get("/cycle?name=texts:resty")[1] == "ok=true\n"  # NOSCRIPT, then loads all
        monitor.mark("resty")
        resty_texts = loaded_texts(monitor, "c", "resty")
    finally:
        monitor.close()
        peer.close()
    # the backend loads the 14 lock scripts, the 2 of fencing, the latch's 3 and the semaphores'
    # 10; the C rock the whole catalogue: every text the backend sends is byte for byte one the
    # C rock sends
    assert len(resty_texts) == 29 and len(c_texts) >= 29
    assert set(resty_texts) <= set(c_texts)
    # and the C rock's SHA1s of those scripts are known to Redis after the backend's loads
    shas = [hashlib.sha1(t).hexdigest() for t in c_texts if t in resty_texts]
    assert raw("SCRIPT", "EXISTS", *shas) == [1] * len(shas)
