"""Writing a file so that it appears whole or not at all: nobody ever reads a partial or unverified file.

On a local disk the content goes to a new temporary file beside the target (``.<name>.<host>-<pid>-<random>.part``),
which replaces the target once ``write`` returned (so once the download was verified) and is removed otherwise. A
writer killed outright (SIGKILL runs no cleanup) leaves its part behind: the next write of the same target on the
same host removes the parts whose writing process is gone (the retry of a lost try), never one whose writer lives. An
object store has no rename, so there the bytes stream straight to the final key in an upload completed only
then (``_object_storage``, docs/object-storage.md).

Neither way refuses an existing target: the temporary name is created with ``O_EXCL``, the target is
replaced. Refusing it is :func:`~airflow_provider_analytics.destinations._target.refuse_existing`'s job, run
right before writing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import secrets
import socket
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

from airflow_provider_analytics.destinations._object_storage import write_object
from airflow_provider_analytics.destinations._target import AnyPath
from airflow_provider_analytics.version_compat import local_path_of
from airflow_provider_analytics.wire.errors import AnalyticsInputError

T = TypeVar("T")


def _open_new(local: Path) -> BinaryIO:
    # A local file is created, never reused: O_EXCL refuses an existing file or a planted symlink.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    return os.fdopen(os.open(local, flags, 0o666), "wb")


# The most entries of the target's folder looked at for parts left by a killed writer (a folder export may hold
# thousands of files; each write looks again).
SCAN_BUDGET = 10_000


@functools.cache
def host_mark() -> str:
    """This host, as the parts written here name it: a short hash of its name (the name itself is not shown)."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def _alive(pid: int) -> bool:
    """Whether a process of this host has that id (in doubt, yes: a live writer's part is never removed)."""
    if os.name != "posix" or not 0 < pid < 2**31:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or a question the system would not answer
        return True
    return True


def remove_parts_of_the_dead(folder: Path, name: str) -> None:
    """Remove the parts of ``name`` in ``folder`` that a writer on this host left when it was killed.

    :param folder: the target's folder (local).
    :param name: the target's file name.
    """
    prefix = f".{name}.{host_mark()}-"
    try:
        with os.scandir(folder) as entries:
            for seen, entry in enumerate(entries):
                if seen >= SCAN_BUDGET:
                    return
                if not (entry.name.startswith(prefix) and entry.name.endswith(".part")):
                    continue
                pid = entry.name[len(prefix) :].split("-", 1)[0]
                if pid.isascii() and pid.isdigit() and not _alive(int(pid)):
                    with contextlib.suppress(OSError):  # gone already, or not ours to remove: the write goes on
                        os.unlink(entry.path)  # a planted symlink is removed itself, never what it points to
    except OSError:
        return  # no folder yet, or not readable: the write says what is wrong


def write_atomically(target: AnyPath, write: Callable[[BinaryIO], T], size_hint: int | None = None) -> T:
    """Run ``write`` on a new temporary file beside ``target``, then move it into place; on failure remove it.

    On an object store (no rename) ``write`` streams into ``target`` itself, in an upload completed only when
    ``write`` returns and aborted when it raises
    (:func:`~airflow_provider_analytics.destinations._object_storage.write_object`).

    :param target: the final file.
    :param write: writes the content to the binary file object it is given.
    :param size_hint: the expected size, when known (an object store's part size depends on it).
    """
    local = local_path_of(target)
    if local is None:
        return write_object(target.fs, target.path, str(target), write, size_hint)
    partial = target.parent / f".{target.name}.{host_mark()}-{os.getpid()}-{secrets.token_hex(8)}.part"
    remove_parts_of_the_dead(local.parent, target.name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _open_new(local_path_of(partial) or Path(partial)) as out:
            result = write(out)
        partial.replace(target)
    except OSError as exc:
        _remove(partial)
        raise AnalyticsInputError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        _remove(partial)
        raise
    return result


def _remove(partial: AnyPath) -> None:
    with contextlib.suppress(OSError):  # the error that brought us here is the one to report
        partial.unlink(missing_ok=True)
