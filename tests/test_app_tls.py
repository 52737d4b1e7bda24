"""The workbench serving TLS itself (issue 31): ``sdckit app --certfile CERT.pem --keyfile KEY.pem``.

A self-signed certificate for 127.0.0.1 is made here with ``openssl req -x509`` (the tests skip
without the openssl command); the server runs in-process on 127.0.0.1 and a free port, and httpx
calls it over https, verifying against that certificate only. Missing, unreadable or wrong files
are refused in one line before anything listens.
"""

from __future__ import annotations

import os
import re
import shutil
import ssl
import subprocess

import httpx
import pytest
from typer.testing import CliRunner

from sdckit.app.server import Workbench, check_serving
from sdckit.cli.app import app
from sdckit.core.errors import ParameterError


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """(certificate, key) PEM files of a self-signed certificate for IP 127.0.0.1."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed (it makes the test's self-signed certificate)")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return cert, key


def test_the_workbench_serves_https_with_its_certificate(certificate):
    cert, key = certificate
    server = Workbench(0, certfile=cert, keyfile=key).start()
    trusted = ssl.create_default_context(cafile=str(cert))
    try:
        assert server.url.startswith(f"https://127.0.0.1:{server.port}/?token=")
        with httpx.Client(verify=trusted, timeout=10) as client:
            first = client.get(server.url)  # the token's visit: a session cookie, Secure over TLS
            assert first.status_code == 303 and "secure" in first.headers["set-cookie"].lower()
            page = client.get(f"{server.base}/open")
            assert page.status_code == 200 and page.url.scheme == "https" and 'id="path"' in page.text
            csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text).group(1)
            own = client.post(f"{server.base}/open/path", data={"path": "", "csrf": csrf},
                              headers={"Origin": server.base})  # the app's own origin is https://
            assert own.status_code == 400 and "Give the path" in own.text
            foreign = client.post(f"{server.base}/open/path", data={"path": "", "csrf": csrf},
                                  headers={"Origin": server.base.replace("https://", "http://")})
            assert foreign.status_code == 403
        with pytest.raises(httpx.ConnectError):  # a client that does not trust the certificate
            httpx.get(server.url, timeout=10)
        with pytest.raises(httpx.HTTPError):  # plain HTTP gets no page
            httpx.get(server.url.replace("https://", "http://"), timeout=10)
    finally:
        server.stop()


def test_the_key_may_be_in_the_certificates_file(certificate, tmp_path):
    both = tmp_path / "both.pem"
    both.write_bytes(certificate[0].read_bytes() + certificate[1].read_bytes())
    server = Workbench(0, certfile=both).start()
    try:
        answer = httpx.get(server.url, verify=ssl.create_default_context(cafile=str(certificate[0])), timeout=10)
        assert answer.status_code == 303
    finally:
        server.stop()


def test_beyond_localhost_a_certificate_replaces_allow_remote(tmp_path):
    state = tmp_path / "state.db"
    state.write_bytes(b"")
    check_serving("192.0.2.7", state, allow_remote=False, encrypted=True)  # HTTPS: no --allow-remote needed
    with pytest.raises(ParameterError, match="--certfile"):
        check_serving("192.0.2.7", state, allow_remote=False)


@pytest.mark.parametrize("files, needle", [
    (["--certfile", "MISSING"], "No file at"),
    (["--certfile", "CERT", "--keyfile", "MISSING"], "No file at"),
    (["--keyfile", "KEY"], "give --certfile"),
    (["--certfile", "CERT"], "no unencrypted PEM private key"),  # no key anywhere
    (["--certfile", "KEY", "--keyfile", "CERT"], "holds no PEM certificate"),  # swapped
    (["--certfile", "JUNK", "--keyfile", "KEY"], "holds no PEM certificate"),
    (["--certfile", "CERT", "--keyfile", "OTHER"], "no unencrypted PEM private key"),  # another certificate's key
    (["--certfile", "CERT", "--keyfile", "SEALED"], "no unencrypted PEM private key"),  # encrypted
])
def test_wrong_certificate_files_are_refused_in_one_line(certificate, tmp_path, files, needle):
    junk, other, sealed = tmp_path / "junk.pem", tmp_path / "other.pem", tmp_path / "sealed.pem"
    junk.write_text("not a certificate\n")
    openssl = shutil.which("openssl")
    subprocess.run([openssl, "genpkey", "-algorithm", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out",
                    str(other)], check=True, capture_output=True, timeout=60)
    subprocess.run([openssl, "pkey", "-in", str(certificate[1]), "-aes256", "-passout", "pass:secret", "-out",
                    str(sealed)], check=True, capture_output=True, timeout=60)
    named = {"CERT": str(certificate[0]), "KEY": str(certificate[1]), "MISSING": str(tmp_path / "no.pem"),
             "JUNK": str(junk), "OTHER": str(other), "SEALED": str(sealed)}
    result = CliRunner().invoke(app, ["app", "--no-browser", *(named.get(a, a) for a in files)])
    assert result.exit_code != 0 and isinstance(result.exception, ParameterError), result.output
    assert needle in str(result.exception) and "\n" not in str(result.exception)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: no unreadable file to give")
def test_an_unreadable_key_is_refused_in_one_line(certificate, tmp_path):
    key = tmp_path / "key.pem"
    key.write_bytes(certificate[1].read_bytes())
    key.chmod(0)
    with pytest.raises(ParameterError, match="Cannot read") as caught:
        Workbench(0, certfile=certificate[0], keyfile=key)
    assert "\n" not in str(caught.value)
