"""universal-pathlib's class for the local store's protocol: ``UPath("vfslocal:///srv/data")``.

Registered in upath's ``universal_pathlib.implementations`` entry-point group, so only upath
imports this module: the store itself never needs upath.
"""

from __future__ import annotations

from fsspec import get_filesystem_class
from upath.core import UPath

# upath reads a protocol's path rules from the class in fsspec's registry of loaded
# filesystems, and warns when the class is not loaded yet: load it first.
get_filesystem_class("vfslocal")


class LocalStorePath(UPath):
    """A host path on the local store (``DescriptorFileSystem``); its ``root`` storage option
    is the folder it may not leave."""

    __slots__ = ()
