"""Files replaced whole: a reader sees the old content or the new one, never a part.

The content goes to a staging file beside the target (same folder, so the same file system),
named by process and thread so concurrent writers never share one, then ``os.replace``
renames it over the target, which POSIX and Windows do atomically.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path


def write_whole(path: Path, text: str) -> None:
    """Replace ``path`` by a file holding ``text`` (UTF-8); on any error the target is left
    as it was and the staging file is removed."""
    staging = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    try:
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
