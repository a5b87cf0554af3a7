import pytest
from conftest import every_store

pytestmark = [pytest.mark.anyio, every_store]


async def test_write_then_read_round_trips_on_every_backend(sandbox):
    async with sandbox.client() as client:
        written = await client.call_tool(
            "write_file", {"path": sandbox.path("notes/a.txt"), "content": "héllo\n", "create_dirs": True}
        )
        assert not written.is_error, written.content
        read = await client.call_tool("read_file", {"path": sandbox.path("notes/a.txt")})
    assert read.content[0].text == "héllo\n"
    assert sandbox.get("notes/a.txt") == "héllo\n".encode()
