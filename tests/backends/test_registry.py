"""The backend registry and typed options: built-in backends first and never silently
replaced by a plug-in, entry points read once, an unknown option named with the one meant."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vfs_mcp_backends import BackendUnavailable, create_mount, known_schemes, registry
from vfs_mcp_backends.s3 import S3Mount


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Install a package whose only content is ``vfs_mcp.backends`` entry points (a real
    dist-info folder on ``sys.path``, as pip leaves one), and read the entry points again."""

    def installed(name: str, schemes: dict[str, str]) -> None:
        info = tmp_path / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        lines = "".join(f"{scheme} = {target}\n" for scheme, target in schemes.items())
        (info / "entry_points.txt").write_text(f"[vfs_mcp.backends]\n{lines}")
        registry.plugins.cache_clear()

    monkeypatch.syspath_prepend(str(tmp_path))
    yield installed
    registry.plugins.cache_clear()


def test_a_plugin_serves_its_own_scheme(install: Any) -> None:
    install("vfs-toy", {"toy": "toy_store:create"})
    assert "toy" in known_schemes()
    mount = create_mount("toy://somewhere")
    assert type(mount.fs).__name__ == "ToyFileSystem" and mount.root == "/somewhere"


def test_a_plugin_claiming_a_builtin_scheme_is_refused_naming_both(install: Any) -> None:
    install("evil-s3", {"s3": "toy_store:create", "toy": "toy_store:create"})
    with pytest.raises(BackendUnavailable) as caught:
        create_mount("s3://bucket")
    message = str(caught.value)
    assert "toy_store:create" in message and "evil-s3" in message and "vfs_mcp_backends.s3:create" in message
    assert create_mount("toy://other").root == "/other"  # its other schemes still serve


def test_without_the_plugin_the_builtin_serves(install: Any) -> None:
    install("unrelated", {"toy": "toy_store:create"})
    assert isinstance(create_mount("s3://bucket", {"anon": True}), S3Mount)


def test_entry_points_are_read_once(install: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    install("vfs-toy", {"toy": "toy_store:create"})
    reads: list[int] = []
    real = registry.distributions

    def counted() -> Any:
        reads.append(1)
        return real()

    monkeypatch.setattr(registry, "distributions", counted)
    for _ in range(3):
        create_mount("toy://again")
        create_mount("memory://again")
        known_schemes()
    assert reads == [1]


def test_of_two_copies_of_a_plugin_the_first_on_the_path_serves(install: Any, tmp_path: Path) -> None:
    install("vfs-toy", {"toy": "toy_store:create"})
    later = tmp_path / "later"
    (later / "vfs_toy-0.9.dist-info").mkdir(parents=True)
    (later / "vfs_toy-0.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vfs-toy\nVersion: 0.9\n")
    (later / "vfs_toy-0.9.dist-info" / "entry_points.txt").write_text("[vfs_mcp.backends]\ntoy = elsewhere:create\n")
    sys.path.append(str(later))
    try:
        registry.plugins.cache_clear()
        assert registry.plugins()["toy"].value == "toy_store:create"
    finally:
        sys.path.remove(str(later))
        registry.plugins.cache_clear()


@pytest.mark.parametrize(
    ("url", "options", "said"),
    [
        (
            "s3://b",
            {"endpoint": "http://127.0.0.1:9"},
            "unknown option 'endpoint' for s3 mounts (did you mean 'endpoint_url'?)",
        ),
        ("s3://b", {"conditional_writes": "sometimes"}, "option conditional_writes = 'sometimes' for s3 mounts"),
        ("memory://m", {"file": {"a.txt": "x"}}, "unknown option 'file' for memory mounts (did you mean 'files'?)"),
        ("memory://m", {"files": ["a.txt"]}, "option files = ['a.txt'] for memory mounts"),
        ("gs://b", {"tokn": "anon"}, "unknown option 'tokn' for gcs mounts (did you mean 'token'?)"),
        (
            "az://c",
            {"acount_name": "a"},
            "unknown option 'acount_name' for azure mounts (did you mean 'account_name'?)",
        ),
        ("LOCAL", {"auto_mkdri": True}, "unknown option 'auto_mkdri' for local mounts (did you mean 'auto_mkdir'?)"),
    ],
)
def test_an_unknown_or_mistyped_option_is_refused_naming_the_one_meant(
    url: str, options: dict[str, Any], said: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError) as caught:
        create_mount(str(tmp_path) if url == "LOCAL" else url, options)
    assert str(caught.value).startswith(said)


def test_options_a_store_passes_on_reach_its_filesystem() -> None:
    mount = create_mount("s3://b", {"anon": True, "endpoint_url": "http://127.0.0.1:9", "use_ssl": False})
    assert mount.fs.anon is True and mount.fs.endpoint_url == "http://127.0.0.1:9"
    assert (
        create_mount("memory://seeded-by-option", {"files": {"a.txt": "x"}}).fs.cat_file("/seeded-by-option/a.txt")
        == b"x"
    )
