"""moto's S3 server in a process of its own, its buckets filled before it listens.

Uploading 100,000 keys through moto's HTTP API takes minutes (a request each); put straight
into its in-memory backend they take seconds, and what the benchmark then reads is moto's
real S3 API over HTTP, as for any other bucket. Run as ``python moto_bucket.py SPEC``: the
JSON file SPEC maps bucket names to ``{key: text}``, or to ``{"tree": [folders, subfolders,
files], "extra": {key: text}}`` for ``data/pNNN/qNNN/fN.txt`` keys (each file's text is its
key) and a few more. Prints the port on stdout once it listens, then serves until killed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def serving(spec: dict[str, Any], folder: Path) -> Iterator[int]:
    """This script serving the buckets of ``spec`` in a process of its own (``spec`` written to
    ``folder``): its port, for as long as the block runs."""
    spec_file = folder / "spec.json"
    spec_file.write_text(json.dumps(spec))
    moto = subprocess.Popen(
        [sys.executable, str(Path(__file__)), str(spec_file)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert moto.stdout is not None
        port = int(moto.stdout.readline() or 0)
        assert port, "moto_bucket.py did not start"
        yield port
    finally:
        moto.kill()
        moto.wait()
        if moto.stdout is not None:
            moto.stdout.close()


def tree_keys(folders: int, subfolders: int, files: int) -> list[str]:
    """``data/pNNN/qNNN/fN.txt``: ``folders`` x ``subfolders`` x ``files`` keys, in key order."""
    return [f"data/p{p:03d}/q{q:03d}/f{f}.txt" for p in range(folders) for q in range(subfolders) for f in range(files)]


def main() -> None:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.s3.models import s3_backends

    with open(sys.argv[1], encoding="utf-8") as file:
        spec: dict[str, dict[str, Any]] = json.load(file)
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for bucket, content in spec.items():
        backend.create_bucket(bucket, "us-east-1")
        if "tree" in content:
            objects = {key: key for key in tree_keys(*content["tree"])} | content.get("extra", {})
        else:
            objects = content
        for key, text in objects.items():
            backend.put_object(bucket, key, text.encode())
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    print(server.get_host_and_port()[1], flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
