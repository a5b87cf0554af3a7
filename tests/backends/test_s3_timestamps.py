"""S3's timestamps read by the standard library say what botocore's own parser says."""

from __future__ import annotations

import pytest
from botocore.utils import parse_timestamp

from vfs_mcp_backends.s3 import timestamp


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-26T10:19:54.000Z",  # a listing's LastModified
        "2026-11-26T10:19:54Z",
        "2026-11-26T10:19:54.123456+02:00",
        "Wed, 21 Oct 2015 07:28:00 GMT",  # a Last-Modified header
        "1445412480",  # epoch seconds (botocore's parser answers)
    ],
)
def test_a_timestamp_is_the_instant_botocore_reads(text: str) -> None:
    assert timestamp(text).timestamp() == parse_timestamp(text).timestamp()
    assert timestamp(text).tzinfo is not None
