"""The jailed filesystem: mounts, ``Jail.resolve`` (the one way from a user's path to a
``Target``), the deny list and its globs, and ``JailedFS``: fsspec's reading verbs over
Targets with errors mapped once."""
