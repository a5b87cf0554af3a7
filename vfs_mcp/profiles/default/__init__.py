"""The default profile: the tool set docs/tools.md lists.

Its table, in the order ``tools/list`` shows it: the tools that read, then those that write
(listed only when some mount is writable, docs/clients.md). Each row names its adapter in this
package's modules, which are imported on a tool's first call: listing the tools loads none of
their operations.
"""

from __future__ import annotations

from vfs_mcp.profiles.table import Tool

FILES, WRITES, LINES, TEXT, COMPARISONS, PATCHES, LINE_EDITS, SEARCH, ANALYTICS, REVIEW = (
    f"{__name__}.{module}:"
    for module in (
        "files",
        "writes",
        "lines",
        "text",
        "comparisons",
        "patches",
        "line_edits",
        "search",
        "analytics",
        "review",
    )
)

TOOLS = (
    # reading files and folders
    Tool(
        FILES + "read_file",
        "Read file",
        "A file, whole or a byte range; images and audio viewable. encoding: a codec or 'base64'. By line: "
        "read_file_lines.",
    ),
    Tool(
        FILES + "read_multiple_files",
        "Read several files",
        "Read several text files; each headed by its path, or its own error.",
    ),
    Tool(
        FILES + "list_directory",
        "List directory",
        "List a directory: type, name, size. pattern: glob on names. Deeper: directory_tree.",
    ),
    Tool(
        FILES + "get_file_info",
        "File info",
        "Metadata: type, size, times, permissions, symlink, MIME type.",
    ),
    Tool(
        FILES + "list_allowed_directories",
        "List allowed directories",
        "The mounts (backend, read-only); paths are absolute inside one, its URL, or relative.",
    ),
    Tool(FILES + "change_directory", "Change directory", "Set the working directory (relative paths start there)."),
    Tool(FILES + "get_working_directory", "Working directory", "The working directory."),
    # reading text
    Tool(
        LINES + "read_file_lines",
        "Read lines",
        "Lines of a text file from a 0-based offset; limit: how many (default all). Fast on huge files.",
    ),
    Tool(LINES + "head_file", "Head of file", "First lines of a text file."),
    Tool(LINES + "tail_file", "Tail of file", "Last lines of a text file; fast on huge logs."),
    Tool(COMPARISONS + "compare_files", "Compare files", "Unified diff of two text files."),
    # searching
    Tool(
        SEARCH + "grep_files",
        "Search file contents",
        "Search contents under a folder or in a file: literal, or regex with is_regex. Gives path:line:col: "
        "text; count_only: counts per file. By name: search_files.",
    ),
    Tool(
        SEARCH + "search_files",
        "Find files by name",
        "Find files and folders by name: a glob, or a substring (any case). content_match: only files containing it.",
    ),
    Tool(
        SEARCH + "directory_tree",
        "Directory tree",
        "A folder's tree. pattern: glob on file names.",
    ),
    # analytics
    Tool(
        ANALYTICS + "calculate_directory_size",
        "Directory size",
        "Total size of a folder, with file and folder counts.",
    ),
    Tool(ANALYTICS + "find_large_files", "Find large files", "Files of at least min_size_mb MiB, largest first."),
    Tool(
        ANALYTICS + "find_empty_directories",
        "Find empty directories",
        "Empty folders (on object stores: empty markers).",
    ),
    Tool(
        ANALYTICS + "find_duplicate_files",
        "Find duplicate files",
        "Groups of files with the same content.",
    ),
    # writing files and folders (and undo)
    Tool(
        WRITES + "undo",
        "Undo",
        "Take back a change if its files are as left (else CONFLICT): change_id's (from its reply, or a "
        "checkpoint name), else this session's newest (to path, if given). and_after: all later ones of its "
        "mounts too. dry_run: preview. An undo is a change: undo its id to redo.",
        read_only=False,
        destructive=True,
    ),
    Tool(
        WRITES + "checkpoint",
        "Checkpoint",
        "Name this point of the timeline; undo(change_id=name, and_after=true) comes back to it.",
        read_only=False,
        writes=True,
    ),
    Tool(
        WRITES + "history",
        "History",
        "Changes made here, newest first: id, time, tool, paths, undone by/undoes/checkpoint. path: a file "
        "or folder's only.",
        writes=True,
    ),
    Tool(
        REVIEW + "review_ready",
        "Ready for review",
        "Your changes here are pending: the files show them to you, to no one else, until the person "
        "applies them. Call this when done: it lists what is pending, for the person to review.",
        read_only=False,
        writes=False,
        review=True,
    ),
    Tool(
        WRITES + "write_file",
        "Write file",
        "Create or replace a file, or append. expected_hash: sha256 from read_file; refuses if it changed. "
        "Partial changes: edit_file.",
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        WRITES + "create_directory",
        "Create directory",
        "Create a directory (parents too, by default).",
        read_only=False,
        idempotent=True,
    ),
    Tool(
        WRITES + "move_file",
        "Move file",
        "Move or rename a file or directory, across mounts too.",
        read_only=False,
        destructive=True,
    ),
    Tool(
        WRITES + "copy_file",
        "Copy file",
        "Copy a file, or a directory with recursive=true, across mounts too.",
        read_only=False,
        destructive=True,
    ),
    Tool(
        WRITES + "delete_path",
        "Delete path",
        "Delete a file, a link (not its target) or, with recursive=true, a folder. force: missing is OK.",
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    # editing text
    Tool(
        TEXT + "edit_file",
        "Edit file",
        "Replace text: each oldText must match one place (exactly, else whitespace-normalised, else fuzzily) "
        "or, with replace_all, all. All edits or none; line endings kept. Returns a diff.",
        read_only=False,
        destructive=True,
        at_start=True,
    ),
    Tool(
        PATCHES + "apply_patch",
        "Apply patch",
        "Apply a multi-file patch, all or nothing: a unified diff (git diff) or *** Begin Patch (Update/Add/"
        "Delete File, Move to). Hunks are placed by their lines, not numbers. path: base for relative names.",
        read_only=False,
        destructive=True,
    ),
    Tool(
        LINE_EDITS + "edit_file_at_line",
        "Edit lines",
        "Edit by 1-based line number (as before the call). expected_content checks a line first: a mismatch "
        "skips that edit (all, with abort_on_verification_failure).",
        read_only=False,
        destructive=True,
    ),
)
