"""The config file is checked before anything starts: a typo or a wrong type refuses to
start with one line naming the file, the key and the key meant; it never leaves a mount
writable or a secret readable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vfs_mcp.cli.options import parser, settings_from
from vfs_mcp.jail.mounts import Config
from vfs_mcp.settings import DEFAULT_MAX_WRITE_BYTES


def refusal(tmp_path: Path, text: str) -> str:
    """What `vfs-mcp --config FILE` prints when it refuses to start (it must refuse)."""
    config = tmp_path / "vfs.toml"
    config.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "vfs_mcp", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(config) in lines[0], done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[[mount]]\nroot = "{root}"\nreadonly = true\n',
            "unknown key 'readonly' in [[mount]] 1 (did you mean 'read_only'?)",
        ),
        (
            '[[mount]]\nroot = "{root}"\nread-only = true\n',
            "unknown key 'read-only' in [[mount]] 1 (did you mean 'read_only'?)",
        ),
        ('denny = [".env"]\n[[mount]]\nroot = "{root}"\n', "unknown key 'denny' (did you mean 'deny'?)"),
        (
            'deny = ".env"\n[[mount]]\nroot = "{root}"\n',
            "deny = '.env': Input should be a valid list (write deny = ['.env'])",
        ),
        ('read_only = "yes"\n[[mount]]\nroot = "{root}"\n', "read_only = 'yes'"),
        ('max_read_bytes = "lots"\n[[mount]]\nroot = "{root}"\n', "max_read_bytes = 'lots'"),
        (
            '[[mount]]\nroot = "{root}"\noptions = {{ endpoint_url = "http://127.0.0.1:9" }}\n',
            "is a local folder and takes no options (endpoint_url)",
        ),
        ("[[mount]]\nread_only = true\n", "[[mount]] 1 needs 'root'"),
    ],
)
def test_a_config_mistake_refuses_to_start_naming_file_and_key(tmp_path: Path, text: str, said: str) -> None:
    assert said in refusal(tmp_path, text.format(root=tmp_path))


def test_sizes_may_be_written_with_units(tmp_path: Path) -> None:
    config = tmp_path / "vfs.toml"
    config.write_text('max_read_bytes = "10 MiB"\ndeny = [".env"]\n')
    loaded = Config.load(config)
    assert (loaded.max_read_bytes, loaded.deny) == (10 * 2**20, [".env"])
    config.write_text('max_read_bytes = "512k"\n')
    assert Config.load(config).max_read_bytes == 512 * 1024


def test_the_write_limit_is_set_in_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "vfs.toml"
    config.write_text('max_write_bytes = "64 MiB"\n')
    settings = settings_from(parser().parse_args(["--config", str(config)]), Config.load(config))
    assert settings.max_write_bytes == 64 * 2**20
    config.write_text("max_read_bytes = 1024\n")
    assert settings_from(parser().parse_args([]), Config.load(config)).max_write_bytes == DEFAULT_MAX_WRITE_BYTES


@pytest.mark.parametrize("depth", [100_000, 5_000])
def test_a_config_nested_too_deeply_is_refused_in_one_line(tmp_path: Path, depth: int) -> None:
    said = refusal(tmp_path, "x = " + "[" * depth + "]" * depth + "\n")
    assert "nested" in said
