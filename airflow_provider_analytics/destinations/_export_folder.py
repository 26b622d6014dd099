"""The folder an export of definitions writes to: what it holds before the export writes (:func:`survey`), and
each file written beneath it without following a link (:func:`write_beneath`).

An export writes ``<section>.yaml`` files, or ``<section>/<name>.yaml`` folders, for the sections it exports. Before
any request, :func:`survey` lists what is already there for those sections, in either layout and as ``.yaml``,
``.yml`` or ``.json`` (what an apply of the folder would read beside the export): each file an earlier export
wrote and nobody edited since (the caller tells them apart, from their bytes), and every other file, which the
export may replace or leave beside its own only when told to. A link is never followed: a file that is a link
is someone else's (replacing it replaces the link, never what it points to), and a section folder that is a link
is refused, since the export's files would land outside the destination while its result named the
destination's path. On a local disk the files are written through file descriptors of the folders opened without
following links, so a link planted between the survey and the write is refused too; an object store has none.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_analytics.destinations._object_storage import write_object
from airflow_provider_analytics.version_compat import local_path_of
from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = ["FolderContents", "survey", "write_beneath"]

SUFFIXES = (".yaml", ".yml", ".json")
AnyPath = Any  # a pathlib.Path or an ObjectStoragePath


@dataclass
class FolderContents:
    """What an export's sections hold in its folder before it writes.

    :param exported: files an earlier export wrote, unedited since.
    :param others: files it did not write (or that were edited since), each with what it is; links included.
    :param linked_folders: section folders that are links (never written into).
    :param in_the_way: on a local disk, what stands where a layout writes and no file can replace: a folder named
        ``<section>.yaml`` (``split_by="kind"`` writes that file), or a file named ``<section>`` (``"object"``
        writes into that folder); each with what it is and the layout (``kind`` or ``object``).
    """

    exported: list[AnyPath] = field(default_factory=list)
    others: list[tuple[AnyPath, str]] = field(default_factory=list)
    linked_folders: list[AnyPath] = field(default_factory=list)
    in_the_way: list[tuple[AnyPath, str, str]] = field(default_factory=list)


def survey(
    root: AnyPath, sections: Iterable[str], is_exported: Callable[[bytes], bool], most_bytes: int
) -> FolderContents:
    """The files of ``sections`` under ``root``, in both layouts, sorted out (:class:`FolderContents`).

    :param root: the destination folder (it may not exist yet).
    :param sections: the sections the export writes (``charts``, ...).
    :param is_exported: whether a file's bytes are an export's own, unedited.
    :param most_bytes: a file larger than this is not an export's (it is not read further).
    """
    contents = FolderContents()
    local = local_path_of(root)
    names = set(sections)
    for entry, name, kind in _entries(root, local):
        stem, suffix = os.path.splitext(name)
        if local is not None and stem in names and suffix == ".yaml" and kind == "folder":
            contents.in_the_way.append((entry, "a folder", "kind"))
        elif local is not None and name in names and kind in ("file", "other"):
            contents.in_the_way.append((entry, "a file" if kind == "file" else "not a folder", "object"))
        if stem in names and suffix in SUFFIXES and kind != "folder":
            _sort(entry, local, kind, is_exported, most_bytes, contents)
        elif name in names and kind == "link":
            contents.linked_folders.append(entry)
        elif name in names and kind == "folder":
            for inner, inner_name, inner_kind in _entries(entry, local_path_of(entry)):
                if os.path.splitext(inner_name)[1] in SUFFIXES and inner_kind != "folder":
                    _sort(inner, local, inner_kind, is_exported, most_bytes, contents)
    return contents


def _entries(folder: AnyPath, local: Path | None) -> list[tuple[AnyPath, str, str]]:
    """``(path, name, kind)`` of each entry of ``folder``, kind one of ``file``, ``folder``, ``link``, ``other``;
    none when it does not exist. Local entries are looked at without following links."""
    if local is None:
        try:
            return sorted(
                ((entry, entry.name, "folder" if entry.is_dir() else "file") for entry in folder.iterdir()),
                key=lambda item: item[1],
            )
        except (FileNotFoundError, NotADirectoryError):  # s3fs: a prefix nothing is under yet
            return []
    try:
        with os.scandir(local) as scanned:
            found = [(folder / entry.name, entry.name, _kind(entry)) for entry in scanned]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as error:
        raise AnalyticsInputError(f"cannot list {local}: {error.strerror or error}") from None
    return sorted(found, key=lambda item: item[1])


def _kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "folder"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _sort(
    path: AnyPath,
    local: Path | None,
    kind: str,
    is_exported: Callable[[bytes], bool],
    most_bytes: int,
    contents: FolderContents,
) -> None:
    if kind == "link":
        contents.others.append((path, "a link"))
        return
    if kind != "file":
        contents.others.append((path, "not a regular file"))
        return
    data = _head(path, local is not None, most_bytes)
    if data is not None and is_exported(data):
        contents.exported.append(path)
    else:
        contents.others.append((path, "not written by an export" if data is not None else "too large to be one"))


def _head(path: AnyPath, local: bool, most_bytes: int) -> bytes | None:
    """The file's bytes, or ``None`` when it holds more than ``most_bytes``; a local one opened without following a
    link or blocking."""
    try:
        if local:
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC
            with open(os.open(local_path_of(path) or Path(path), flags), "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                data: bytes = stream.read(min(size, most_bytes) + 1)  # not a buffer of most_bytes for a small file
                if size < len(data) <= most_bytes:  # it grew since
                    data += stream.read(most_bytes + 1 - len(data))
        else:
            with path.open("rb") as stream:
                data = stream.read(most_bytes + 1)
    except OSError as error:
        raise AnalyticsInputError(f"cannot read {path}: {error.strerror or error}") from None
    return None if len(data) > most_bytes else data


def write_beneath(root: AnyPath, parts: Sequence[str], data: bytes) -> AnyPath:
    """Write ``data`` to ``root/parts...`` whole or not at all, following no link below ``root``; the path written.

    Locally: each folder below ``root`` is made if missing and opened without following a link (a link is refused),
    the content goes to a new temporary file in the last one and is renamed over the target (which replaces a link
    there, never what it points to). On an object store: a single upload, completed once the bytes are sent.

    :param root: the destination folder (``root`` itself may be a link: it is what the user named).
    :param parts: the path below ``root``, one name each, the file's last.
    :param data: the content.
    :raises AnalyticsInputError: a folder below ``root`` is a link or not a folder, or the write failed.
    """
    target = root.joinpath(*parts)
    local = local_path_of(root)
    if local is None:
        write_object(target.fs, target.path, str(target), lambda out: out.write(data), len(data))
        return target
    folder = _open_folder(local, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0))
    partial = f".{parts[-1]}.{secrets.token_hex(8)}.part"
    try:
        where = local
        for name in parts[:-1]:
            where = where / name
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=folder)
            inner = _open_folder(where, _NO_LINK_FOLDER, folder, name)
            os.close(folder)
            folder = inner
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
        try:
            with open(os.open(partial, flags, 0o666, dir_fd=folder), "wb") as out:
                out.write(data)
            os.replace(partial, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):  # the error that brought us here is the one to report
                os.unlink(partial, dir_fd=folder)
            raise
    except OSError as error:
        raise AnalyticsInputError(f"cannot write {target}: {error.strerror or error}") from None
    finally:
        os.close(folder)
    return target


def _is_link(name: str | Path, parent: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode)
    except OSError:
        return False


_NO_LINK_FOLDER = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def _open_folder(path: Path, flags: int, parent: int | None = None, name: str | None = None) -> int:
    try:
        return os.open(name or path, flags, dir_fd=parent)
    except OSError as error:
        if parent is not None and _is_link(name or path, parent):
            raise AnalyticsInputError(
                f"{path} is a link: the export does not follow links inside its destination (its files would land"
                " elsewhere); remove the link, or export to the folder it points to"
            ) from None
        raise AnalyticsInputError(f"cannot write in {path}: {error.strerror or error}") from None
