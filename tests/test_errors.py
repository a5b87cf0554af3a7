"""Unit tests of ``vfs_mcp.errors``: the one boundary where foreign exceptions become codes (docs/protocol.md, "Errors");
and how an error names a path the caller wrote another way (``vfs_mcp.jail.resolve.as_written``).

Every exception built here carries ``/secret/host/path`` in its text, in its filename, or in
an S3 error message; no translated message may repeat it (errors never reveal the host
behind a mount).
"""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from vfs_mcp import errors
from vfs_mcp.errors import ALL_ERRORS, VfsError, translate
from vfs_mcp.testing import local_server, memory_server

SECRET = "/secret/host/path"
SHOWN = "memory://m/docs/report.txt"

# docs/protocol.md, "Errors": code -> (HTTP-like status, JSON-RPC code).
SPEC_CODES: dict[str, tuple[int, int]] = {
    "NOT_FOUND": (404, -32602),
    "ACCESS_DENIED": (403, -32603),
    "READ_ONLY": (403, -32603),
    "INVALID_ARGUMENT": (400, -32602),
    "IS_A_DIRECTORY": (400, -32602),
    "NOT_A_DIRECTORY": (400, -32602),
    "ALREADY_EXISTS": (409, -32602),
    "CONFLICT": (409, -32602),
    "BINARY_CONTENT": (422, -32602),
    "TOO_LARGE": (413, -32602),
    "DECLINED": (403, -32603),
    "INTERNAL": (500, -32603),
}


def client_error(code: str, operation: str = "GetObject") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"key {SECRET} failed"}}, operation)


def check(exc: BaseException, code: str) -> VfsError:
    """Translate ``exc``; it must carry ``code``, name the user's path, and hide the host's."""
    err = translate(exc, SHOWN)
    assert isinstance(err, VfsError)
    assert err.code == code, f"{type(exc).__name__}({exc}) -> {err.code}, expected {code}"
    for rendered in (err.message, str(err), repr(err.to_dict()), *map(str, err.args)):
        assert SECRET not in rendered, f"foreign text leaked: {rendered!r}"
        assert "secret" not in rendered
    assert SHOWN in err.message
    assert "\n" not in str(err)
    assert (err.status, err.jsonrpc_code) == SPEC_CODES[code]
    return err


# -- the error classes ------------------------------------------------------------------


def test_all_errors_covers_exactly_the_spec_codes():
    codes = [cls.code for cls in ALL_ERRORS]
    assert sorted(codes) == sorted(SPEC_CODES)
    assert len(codes) == len(set(codes)), "one class per code"


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda cls: cls.code)
def test_each_error_class_carries_its_spec_status_and_json_rpc_code(cls):
    assert issubclass(cls, VfsError)
    assert not issubclass(cls, ToolError), (
        "our errors know nothing of MCP: vfs_mcp.server.boundary turns them into replies"
    )
    assert (cls.status, cls.jsonrpc_code) == SPEC_CODES[cls.code]
    err = cls("something went wrong; do this instead")
    assert str(err) == f"{cls.code}: something went wrong; do this instead"
    assert err.to_dict() == {
        "code": cls.code,
        "status": SPEC_CODES[cls.code][0],
        "jsonrpc_code": SPEC_CODES[cls.code][1],
        "message": "something went wrong; do this instead",
    }


def test_the_error_classes_are_exported_under_their_spec_names():
    names = {
        "NOT_FOUND": "NotFound",
        "ACCESS_DENIED": "AccessDenied",
        "READ_ONLY": "ReadOnly",
        "INVALID_ARGUMENT": "InvalidArgument",
        "IS_A_DIRECTORY": "IsADirectory",
        "NOT_A_DIRECTORY": "NotADirectory",
        "ALREADY_EXISTS": "AlreadyExists",
        "CONFLICT": "Conflict",
        "BINARY_CONTENT": "BinaryContent",
        "TOO_LARGE": "TooLarge",
        "DECLINED": "Declined",
        "INTERNAL": "Internal",
    }
    for code, name in names.items():
        assert getattr(errors, name).code == code


def test_translate_passes_our_own_errors_through_unchanged():
    for cls in ALL_ERRORS:
        err = cls(f"{SHOWN} is what it is")
        assert translate(err, "other display") is err


# -- OS errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (FileNotFoundError(errno.ENOENT, "No such file or directory", SECRET), "NOT_FOUND"),
        (FileNotFoundError(SECRET), "NOT_FOUND"),
        (PermissionError(errno.EACCES, "Permission denied", SECRET), "ACCESS_DENIED"),
        (PermissionError(SECRET), "ACCESS_DENIED"),
        (IsADirectoryError(errno.EISDIR, "Is a directory", SECRET), "IS_A_DIRECTORY"),
        (IsADirectoryError(SECRET), "IS_A_DIRECTORY"),
        (NotADirectoryError(errno.ENOTDIR, "Not a directory", SECRET), "NOT_A_DIRECTORY"),
        (NotADirectoryError(SECRET), "NOT_A_DIRECTORY"),
        (FileExistsError(errno.EEXIST, "File exists", SECRET), "ALREADY_EXISTS"),
        (FileExistsError(SECRET), "ALREADY_EXISTS"),
    ],
    ids=lambda v: type(v).__name__ + ("+errno" if getattr(v, "errno", None) else "") if isinstance(v, OSError) else v,
)
def test_the_builtin_os_error_classes_map_to_their_codes(exc, code):
    check(exc, code)


@pytest.mark.parametrize(
    ("number", "code"),
    [
        (errno.ENOENT, "NOT_FOUND"),
        (errno.EACCES, "ACCESS_DENIED"),
        (errno.EPERM, "ACCESS_DENIED"),
        (errno.EROFS, "READ_ONLY"),
        (errno.EISDIR, "IS_A_DIRECTORY"),
        (errno.ENOTDIR, "NOT_A_DIRECTORY"),
        (errno.EEXIST, "ALREADY_EXISTS"),
        (errno.ENOTEMPTY, "ALREADY_EXISTS"),
        (errno.ELOOP, "ACCESS_DENIED"),
        (errno.ENAMETOOLONG, "INVALID_ARGUMENT"),
        (errno.ENOSPC, "INTERNAL"),
        (errno.EDQUOT, "INTERNAL"),
        (errno.EFBIG, "TOO_LARGE"),
        (errno.EXDEV, "INVALID_ARGUMENT"),
    ],
    ids=lambda v: errno.errorcode.get(v, v) if isinstance(v, int) else v,
)
def test_an_os_error_maps_by_errno(number, code):
    check(OSError(number, f"{SECRET}: failure", SECRET), code)
    check(OSError(number, "failure", SECRET, None, f"{SECRET}.tmp"), code)


def test_the_errno_decides_over_a_misleading_exception_class():
    # s3fs and fsspec raise plain OSError subclasses with the real errno attached.
    check(PermissionError(errno.EROFS, "Read-only file system", SECRET), "READ_ONLY")
    check(OSError(errno.EISDIR, "Is a directory", SECRET), "IS_A_DIRECTORY")


def test_out_of_space_and_quota_errors_say_nothing_was_changed():
    for number in (errno.ENOSPC, errno.EDQUOT):
        err = check(OSError(number, "full", SECRET), "INTERNAL")
        assert "nothing was changed" in err.message


def test_an_os_error_with_an_unlisted_or_missing_errno_is_internal():
    check(OSError(errno.EIO, "Input/output error", SECRET), "INTERNAL")
    check(OSError(SECRET), "INTERNAL")


@pytest.mark.parametrize(
    "exc",
    [
        TimeoutError(SECRET),
        TimeoutError(errno.ETIMEDOUT, "timed out", SECRET),
        ConnectionError(SECRET),
        ConnectionRefusedError(errno.ECONNREFUSED, "refused", SECRET),
        ConnectionResetError(errno.ECONNRESET, "reset", SECRET),
        BrokenPipeError(errno.EPIPE, "broken pipe", SECRET),
    ],
    ids=lambda exc: type(exc).__name__ + ("+errno" if exc.errno else ""),
)
def test_timeouts_and_connection_failures_are_internal_and_say_so(exc):
    err = check(exc, "INTERNAL")
    assert "time" in err.message or "reach" in err.message or "answer" in err.message


# -- S3 (botocore) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("s3_code", "code"),
    [
        ("NoSuchKey", "NOT_FOUND"),
        ("NoSuchBucket", "NOT_FOUND"),
        ("404", "NOT_FOUND"),
        ("AccessDenied", "ACCESS_DENIED"),
        ("403", "ACCESS_DENIED"),
        ("InvalidRange", "INVALID_ARGUMENT"),
        ("PreconditionFailed", "CONFLICT"),
    ],
)
def test_a_botocore_client_error_maps_by_its_s3_code(s3_code, code):
    check(client_error(s3_code), code)


@pytest.mark.parametrize(("s3_code", "code"), [("NoSuchKey", "NOT_FOUND"), ("PreconditionFailed", "CONFLICT")])
def test_a_client_error_wrapped_by_s3fs_is_still_recognised(s3_code, code):
    # s3fs re-raises ClientError as a plain OSError "from" the original.
    try:
        try:
            raise client_error(s3_code)
        except ClientError as inner:
            raise OSError(f"{SECRET}: wrapped") from inner
    except OSError as outer:
        check(outer, code)


def test_an_unknown_s3_error_code_is_internal():
    check(client_error("SlowDown"), "INTERNAL")


# -- text and codecs ------------------------------------------------------------------------


def test_a_unicode_decode_error_is_binary_content_suggesting_base64():
    try:
        f"{SECRET}\xff".encode("latin-1").decode("utf-8")
    except UnicodeDecodeError as exc:
        err = check(exc, "BINARY_CONTENT")
    assert "base64" in err.message


def test_a_unicode_encode_error_is_an_invalid_argument_not_binary_content():
    # Text that cannot be written in the asked encoding (or a path the OS cannot encode)
    # is a bad argument; nothing was read, so "read it with base64" would mislead.
    try:
        f"{SECRET}€".encode("ascii")
    except UnicodeEncodeError as exc:
        check(exc, "INVALID_ARGUMENT")


def test_an_unknown_codec_lookup_error_is_invalid_argument():
    import codecs

    try:
        codecs.lookup(f"{SECRET}-codec")
    except LookupError as exc:
        err = check(exc, "INVALID_ARGUMENT")
    assert "encoding" in err.message


@pytest.mark.parametrize("exc", [KeyError(SECRET), IndexError(SECRET)], ids=lambda e: type(e).__name__)
def test_a_key_or_index_error_from_a_backend_is_internal_not_an_unknown_encoding(exc):
    # KeyError and IndexError are LookupErrors too, but they mean a backend bug, not a codec name.
    err = check(exc, "INTERNAL")
    assert "encoding" not in err.message


# -- anything else ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [RuntimeError(SECRET), ValueError(SECRET), TypeError(SECRET), AttributeError(SECRET), Exception(SECRET)],
    ids=lambda exc: type(exc).__name__,
)
def test_an_unknown_exception_is_internal_and_its_detail_goes_only_to_the_server_log(exc, caplog):
    with caplog.at_level(logging.DEBUG, logger="vfs_mcp"):
        err = check(exc, "INTERNAL")
    assert "log" in err.message
    logged = [r for r in caplog.records if r.name == "vfs_mcp"]
    assert logged, "the detail must be logged on the server side"
    assert any(r.exc_info and r.exc_info[1] is exc for r in logged)


# -- paths in errors: as the caller wrote them, and as the mount names them -------------------


@pytest.mark.anyio
@pytest.mark.parametrize("store", ["memory", "local"])
async def test_an_error_names_a_path_as_the_caller_wrote_it_and_as_the_mount_names_it(
    store: str, tmp_path: Path
) -> None:
    server = memory_server() if store == "memory" else local_server(folder=tmp_path)
    async with server as client:
        client.fs.mkdir("src")
        root = client.fs.root
        relative = await client.call_tool("list_directory", {"path": "missing_dir"})
        dotted = await client.call_tool("read_file", {"path": "./src/../notes.txt"})
        await client.call_tool("change_directory", {"path": "src"})
        from_cwd = await client.call_tool("read_file", {"path": "app.py"})
        whole = await client.call_tool("read_file", {"path": f"{root}/src/app.py"})

    assert (
        text(relative)
        == f"NOT_FOUND: missing_dir ({root}/missing_dir) does not exist; list its folder to check the name"
    )
    assert (
        text(dotted)
        == f"NOT_FOUND: ./src/../notes.txt ({root}/notes.txt) does not exist; list its folder to check the name"
    )
    assert text(from_cwd) == f"NOT_FOUND: app.py ({root}/src/app.py) does not exist; list its folder to check the name"
    assert (
        text(whole) == f"NOT_FOUND: {root}/src/app.py does not exist; list its folder to check the name"
    )  # written as the mount names it: once


def text(result: CallToolResult) -> str:
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text
