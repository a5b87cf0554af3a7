"""Bytes and text: codecs, which coding a file is in, finding literals, names as output writes them, a text file held for editing."""
