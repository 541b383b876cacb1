"""The wheel's own OpenSSL finds the system's CA certificates where each Linux keeps them, when the
user names no tls_ca_file: SSL_CERT_FILE / SSL_CERT_DIR first, then the known bundle paths (the
list of Go's crypto/x509), then OpenSSL's built-in /etc/ssl. Each case runs the installed wheel in
a private mount namespace (unshare -m) whose /etc and /var/lib are empty but for the distribution's
layout, the test CA in the place of its bundle: the host's files are never touched, and its own
CAs (which do not trust the test CA anyway) are out of sight."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest
from pkgkit import SMOKE, Venv, clean_env, python_tag, run
from test_wheels import wheel_for

RHEL_BUNDLE = "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"
# distribution: {path: the CA bundle (None) or the target of a symlink}, as each ships it
LAYOUTS = {
    "rhel": {RHEL_BUNDLE: None, "/etc/pki/tls/certs/ca-bundle.crt": RHEL_BUNDLE,
             "/etc/ssl/certs": "/etc/pki/tls/certs"},
    "amazon-linux-2023": {"/etc/pki/tls/certs/ca-bundle.crt": None},
    "suse": {"/var/lib/ca-certificates/ca-bundle.pem": None,
             "/etc/ssl/ca-bundle.pem": "/var/lib/ca-certificates/ca-bundle.pem"},
    "alpine": {"/etc/ssl/certs/ca-certificates.crt": None,
               "/etc/ssl/cert.pem": "/etc/ssl/certs/ca-certificates.crt"},
    "debian-bundle-only": {"/etc/ssl/certs/ca-certificates.crt": None},
}
NAME_SERVICE = ("hosts", "nsswitch.conf", "resolv.conf", "host.conf", "gai.conf", "passwd", "group")


def namespace_ok():
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                           capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not shutil.which("unshare") or not namespace_ok(),
                                reason="no private mount namespace here (unshare -m)")


@pytest.fixture(scope="module")
def installed(tmp_path_factory, tls_server):
    """This CPython's wheel of make wheel in a fresh virtualenv."""
    env = Venv(sys.executable, tmp_path_factory.mktemp("ca") / "venv")
    result = env.pip_install("--no-index", "--no-deps", wheel_for(python_tag(sys.executable)))
    assert result.returncode == 0, result.stderr
    return env


def smoke_in(layout, ca, env, url, **environ):
    """smoke_lock.py (no CA option) in a namespace with `layout`, the test CA as its bundle."""
    # the host's name-service files stay (without /etc/hosts a lookup of this host's own name
    # waits for a DNS server that is not there); nothing else of /etc and /var/lib is seen
    keep = " ".join(NAME_SERVICE)
    steps = ["mount --bind /etc \"$0\"", "mount -t tmpfs none /etc",
             f'for f in {keep}; do if [ -e "$0/$f" ]; then cp "$0/$f" /etc/; fi; done',
             "mount -t tmpfs none /var/lib"]
    for path, target in layout.items():
        steps.append(f"mkdir -p {shlex.quote(os.path.dirname(path))}")
        steps.append(f"cp {shlex.quote(ca)} {shlex.quote(path)}" if target is None
                     else f"ln -s {shlex.quote(target)} {shlex.quote(path)}")
    script = " && ".join(steps) + ' && exec "$@"'
    host_etc = tempfile.mkdtemp(prefix="host-etc-")
    plain = {k: v for k, v in clean_env(**environ).items()
             if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR") or k in environ}
    try:
        return run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, host_etc,
                    env.python, SMOKE, url], cwd=env.dir, env=plain)
    finally:
        os.rmdir(host_etc)


def verified(result):
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["held"] and report["tls"], report


def refused(result):
    assert result.returncode != 0, result.stdout
    assert "verif" in result.stderr.lower(), result.stderr


@pytest.mark.parametrize("distribution", sorted(LAYOUTS))
def test_the_system_bundle_is_found_where_the_distribution_keeps_it(distribution, tls_server,
                                                                    installed):
    _, url, certs = tls_server
    verified(smoke_in(LAYOUTS[distribution], str(certs / "ca.crt"), installed, url))


def test_no_bundle_anywhere_refuses_the_server(tls_server, installed):
    """The control: in the namespace nothing else trusts the test CA (the host's CAs are out of
    sight), so each case above passes by the path it lays out."""
    _, url, certs = tls_server
    refused(smoke_in({}, str(certs / "ca.crt"), installed, url))


def test_ssl_cert_file_comes_before_the_system_bundle(tls_server, installed, tmp_path):
    _, url, certs = tls_server
    rhel = LAYOUTS["rhel"]
    # SSL_CERT_FILE names the test CA; the system's bundle (at RHEL's path) is another CA
    verified(smoke_in(rhel, str(certs / "other-ca.crt"), installed, url,
                      SSL_CERT_FILE=str(certs / "ca.crt")))
    # and the other way round: the variable is obeyed, not merely added to the system's CAs
    refused(smoke_in(rhel, str(certs / "ca.crt"), installed, url,
                     SSL_CERT_FILE=str(certs / "other-ca.crt")))


def test_ssl_cert_dir_comes_before_the_system_bundle(tls_server, installed, tmp_path):
    _, url, certs = tls_server
    hashed = tmp_path / "hashed"
    hashed.mkdir()
    shutil.copy(certs / "ca.crt", hashed / "ca.crt")
    subprocess.run(["openssl", "rehash", str(hashed)], check=True)
    verified(smoke_in(LAYOUTS["rhel"], str(certs / "other-ca.crt"), installed, url,
                      SSL_CERT_DIR=str(hashed)))
