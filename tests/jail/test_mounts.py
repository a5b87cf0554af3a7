"""The mount table, the config file and the backend registry (plug-ins included)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from vfs_mcp.cli.options import parser, settings_from
from vfs_mcp.jail.mounts import Config, MountSpec, merge_specs, open_mount, open_mounts
from vfs_mcp_backends import BackendUnavailable, create_mount, known_schemes, registry, scheme_of


def test_plain_paths_and_file_urls_are_local_mounts(tmp_path: Path) -> None:
    for root in (str(tmp_path), f"file://{tmp_path}"):
        mount = open_mount(MountSpec(root))
        assert mount.is_local
        assert mount.url == str(tmp_path)


def test_memory_mounts_have_isolated_stores() -> None:
    first = open_mount(MountSpec("memory://same", options={"files": {"a.txt": "one"}}))
    second = open_mount(MountSpec("memory://same"))
    assert first.fs.cat_file("/same/a.txt") == b"one"
    assert not second.fs.exists("/same/a.txt")


def test_memory_mount_is_seeded_from_a_folder_without_following_links(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    (tmp_path / "link.txt").symlink_to("/etc/hostname")
    mount = open_mount(MountSpec("memory://seeded", options={"seed_dir": str(tmp_path)}))
    assert mount.fs.cat_file("/seeded/src/app.py") == b"print(1)\n"
    assert not mount.fs.exists("/seeded/link.txt")


def test_a_missing_local_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot mount"):
        open_mount(MountSpec(str(tmp_path / "missing")))


def test_s3_mount_needs_a_bucket() -> None:
    with pytest.raises(ValueError, match="bucket"):
        open_mount(MountSpec("s3://"))


def test_two_roots_written_the_same_way_are_one_mount(tmp_path: Path) -> None:
    mounts = open_mounts([MountSpec(str(tmp_path)), MountSpec(f"file://{tmp_path}")])
    assert len(mounts) == 1


def test_read_only_flag_applies_to_every_mount(tmp_path: Path) -> None:
    mounts = open_mounts([MountSpec(str(tmp_path)), MountSpec("memory://m")], read_only=True)
    assert all(m.read_only for m in mounts)


def test_config_file_gives_mount_options_and_policy(tmp_path: Path) -> None:
    config_file = tmp_path / "vfs.toml"
    config_file.write_text(
        textwrap.dedent(
            f"""
            read_only = false
            deny = [".env", "*.pem"]
            max_read_bytes = 1024

            [[mount]]
            root = "{tmp_path}"
            read_only = true

            [[mount]]
            root = "memory://scratch"
            options = {{ files = {{ "a.txt" = "hi" }} }}
            """
        )
    )
    config = Config.load(config_file)
    assert config.deny == [".env", "*.pem"]
    specs = merge_specs([], config)
    mounts = open_mounts(specs)
    assert [m.url for m in mounts] == [str(tmp_path), "memory://scratch"]
    assert mounts[0].read_only and not mounts[1].read_only
    assert mounts[1].fs.cat_file("/scratch/a.txt") == b"hi"
    args = parser().parse_args(["--config", str(config_file), "--deny", "id_rsa*"])
    settings = settings_from(args, config)
    assert settings.deny == (".env", "*.pem", "id_rsa*")
    assert settings.max_read_bytes == 1024


def test_a_root_argument_takes_the_options_of_the_config_mount_with_that_root(tmp_path: Path) -> None:
    config = Config(mounts=[MountSpec(str(tmp_path), read_only=True)])
    specs = merge_specs([str(tmp_path), "memory://x"], config)
    assert specs[0].read_only
    assert specs[1].root == "memory://x"


@pytest.mark.parametrize("text", ["[[mount]]\nread_only = true\n", "not = [valid"])
def test_a_broken_config_file_is_a_clear_error(tmp_path: Path, text: str) -> None:
    config_file = tmp_path / "bad.toml"
    config_file.write_text(text)
    with pytest.raises(ValueError, match="config"):
        Config.load(config_file)


def test_schemes_are_read_from_urls() -> None:
    assert scheme_of("/abs/dir") == "file"
    assert scheme_of("S3://Bucket/x") == "s3"
    assert {"file", "memory", "s3"} <= set(known_schemes())


def test_an_fsspec_protocol_without_its_package_gives_an_install_hint() -> None:
    with pytest.raises(BackendUnavailable, match="install"):
        create_mount("dropbox://folder")  # fsspec knows it; its package is not installed


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(BackendUnavailable, match="no backend"):
        create_mount("nosuchproto://x")


def test_third_party_backends_plug_in_through_the_entry_point_group(tmp_path: Path) -> None:
    dist = tmp_path / "vfs_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vfs-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[vfs_mcp.backends]\ndemo = vfs_plugin_demo:create\n")
    (tmp_path / "vfs_plugin_demo.py").write_text(
        textwrap.dedent(
            """
            from fsspec.implementations.memory import MemoryFileSystem
            from vfs_mcp_backends import BackendMount, Capabilities

            def create(url, options):
                fs = MemoryFileSystem(global_store=False, skip_instance_cache=True)
                fs.pipe_file("/plugged/hello.txt", b"from a plug-in")
                return BackendMount(fs=fs, root="/plugged", capabilities=Capabilities())
            """
        )
    )
    sys.path.insert(0, str(tmp_path))
    registry.plugins.cache_clear()  # entry points are read once per process: read them again
    try:
        assert "demo" in known_schemes()
        mount = open_mount(MountSpec("demo://anything"))
        assert mount.url == "demo://anything"
        assert mount.fs.cat_file(mount.fs_path("hello.txt")) == b"from a plug-in"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("vfs_plugin_demo", None)
        registry.plugins.cache_clear()
