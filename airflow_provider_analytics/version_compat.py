"""Everything that differs between the Airflow releases this provider supports (2.11 to 3.3), in one place.

Names Airflow only moved (``BaseHook``, ``BaseOperator``, ``conf``, the exceptions, ``ObjectStoragePath``,
``ResumableJobMixin``, ``BaseEventTrigger``, the async connection lookup) come from
``apache-airflow-providers-common-compat`` wherever they are used. This module holds what that package
does not bridge, and the release flags the provider itself reads (tests/support/releases.py holds those only
tests branch on); docs/compatibility.md is the table of what each difference means for users.

Internal, though its name has no leading underscore (Airflow's own providers use this name): not public API,
free to change in any release.
"""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version
from pathlib import Path, PurePath
from typing import Any

from airflow import __version__ as _AIRFLOW_VERSION_TEXT
from packaging.version import Version

# Internal (its name is the one Airflow's own providers use for this module): nothing here is public API.
__all__: list[str] = []

AIRFLOW_VERSION = Version(Version(_AIRFLOW_VERSION_TEXT).base_version)
AIRFLOW_V_3_0_PLUS = Version("3.0.0") <= AIRFLOW_VERSION
AIRFLOW_V_3_1_PLUS = Version("3.1.0") <= AIRFLOW_VERSION
AIRFLOW_V_3_2_PLUS = Version("3.2.0") <= AIRFLOW_VERSION
AIRFLOW_V_3_3_PLUS = Version("3.3.0") <= AIRFLOW_VERSION

# Airflow 3.3 lets a task decide its retries by the exception (AIP-105: retry_policy=); operators/retry_policy.py.
HAS_TASK_RETRY_POLICIES = AIRFLOW_V_3_3_PLUS


@functools.cache
def universal_pathlib_version() -> str:
    """The installed universal-pathlib's version, read once (reading a distribution's metadata costs
    milliseconds, and every DAG file that imports an operator imports this module)."""
    try:
        return _distribution_version("universal-pathlib")
    except PackageNotFoundError:  # every supported Airflow depends on it; kept safe for odd installs
        return "0"


# ObjectStoragePath is built on universal-pathlib, whose shape changed: 0.2 (Airflow 2.11, 3.0 and 3.1 resolve
# it) makes every ObjectStoragePath a pathlib.Path subclass whose str() is its URI, so it passes
# isinstance(p, Path) and os functions given one see "file:///..."; 0.3 (3.2+) is no Path. Airflow 3.0 allows
# 0.3 too, but its ObjectStoragePath then refuses every protocol ("detected protocol s3 which is
# incompatible"): there, object storage destinations need universal-pathlib<0.3 (docs/compatibility.md).
def object_storage_paths_work() -> bool:
    """Whether this Airflow's ``ObjectStoragePath`` accepts object storage protocols (not 3.0 on upath 0.3)."""
    return not (
        AIRFLOW_V_3_0_PLUS and not AIRFLOW_V_3_1_PLUS and Version("0.3") <= Version(universal_pathlib_version())
    )


_LOCAL_PROTOCOLS = ("file", "local")


def local_path_of(path: Any) -> Path | None:
    """The plain :class:`pathlib.Path` of a path on this machine, or ``None`` for object storage.

    An ``ObjectStoragePath`` on the local file system (protocol ``file`` or ``local``) becomes the plain path
    it names, so it is written with the same local-file rules as a path string on every universal-pathlib.

    :param path: a ``pathlib`` path or an ``ObjectStoragePath``.
    """
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    if isinstance(path, ObjectStoragePath):  # checked first: on universal-pathlib 0.2 it is a PurePath too
        return Path(path.path) if path.protocol in _LOCAL_PROTOCOLS else None
    return Path(path) if isinstance(path, PurePath) else None


def bucket_of(path: Any) -> str:
    """The bucket (or container) an object storage path names, ``""`` when it names none.

    On universal-pathlib 0.2 (Airflow 2.11, 3.0, 3.1) the bucket of ``s3://aws_conn@bucket/key`` keeps the
    connection id (``aws_conn@bucket``); no bucket or container name holds an ``@``.

    :param path: an ``ObjectStoragePath``.
    """
    bucket = getattr(path, "bucket", "")
    return bucket.rpartition("@")[2] if isinstance(bucket, str) else ""


def require_airflow_3(feature: str) -> None:
    """Fail an import with a sentence, not a raw ``ImportError``, where a feature needs Airflow 3.

    :param feature: what the importing module provides, for the message.
    :raises ImportError: on Airflow 2.
    """
    if not AIRFLOW_V_3_0_PLUS:
        raise ImportError(
            f"{feature} needs Airflow 3.0 or later (this is Airflow {_AIRFLOW_VERSION_TEXT}); "
            "see docs/compatibility.md for what works on Airflow 2.11"
        )


def link_xcom_key(link: Any) -> str:
    """The XCom key an operator link's URL is kept under.

    Airflow 3 names it ``link.xcom_key``; Airflow 2.11 has no such attribute, and its web server asks the
    link itself (:func:`link_url`), so the same name is used there.

    :param link: the ``BaseOperatorLink`` instance.
    """
    return str(getattr(link, "xcom_key", None) or f"_link_{type(link).__name__}")


def link_url(ti_key: Any, key: str) -> str:
    """The URL an operator pushed for a link, or ``""`` (for ``BaseOperatorLink.get_link``).

    :param ti_key: the task instance key Airflow passes to ``get_link``.
    :param key: from :func:`link_xcom_key`.
    """
    if AIRFLOW_V_3_0_PLUS:
        from airflow.sdk.bases.xcom import BaseXCom

        return str(BaseXCom.get_value(ti_key=ti_key, key=key) or "")
    from airflow.models.xcom import XCom

    return str(XCom.get_value(ti_key=ti_key, key=key) or "")


# The one read of Airflow internals in the provider (tests/test_private_api_guard.py allows it here only).
# Airflow 3.3's AssetStateStoreAccessors, the asset_state_store an event trigger is given, holds one accessor
# per watched asset in these two dicts and offers no public way to list them: its aget/aset refuse to choose
# when there are several, and subscripting needs the Asset, which a trigger is not told. tests/triggers/
# test_asset_state_accessors.py fails on any Airflow whose store lacks them; apache-airflow<3.4 keeps the
# provider on releases that were checked.
ASSET_STATE_STORE_INTERNALS = ("_by_name", "_by_uri")


def asset_state_accessors(store: Any) -> list[Any]:
    """The state accessor of each asset an event trigger watches, for reading and writing each one.

    Assets whose watchers serialize alike share one trigger, and Airflow then hands it one store for all of
    them. With one asset (or a store of unknown shape) the store itself is the accessor.

    :param store: the trigger's ``asset_state_store`` (an ``AssetStateStoreAccessors``); ``None`` before
        Airflow 3.3 or when the triggerer set none.
    :returns: nothing without a store; else accessors with ``aget``/``aset``.
    """
    if store is None:
        return []
    by_name, by_uri = (getattr(store, name, None) for name in ASSET_STATE_STORE_INTERNALS)
    if isinstance(by_name, dict) and isinstance(by_uri, dict) and len(by_name) + len(by_uri) > 1:
        return [*by_name.values(), *by_uri.values()]
    return [store]


@functools.cache
def reschedule_exception() -> type[Exception]:
    """Airflow's ``AirflowRescheduleException``, which a sensor in reschedule mode raises to give its slot back.

    common-compat does not bridge it: Airflow 3.3 defines it in ``airflow.sdk.exceptions`` (its
    ``airflow.exceptions`` re-exports it), 2.11 to 3.1 in ``airflow.exceptions`` only. Read once, where a task runs.
    """
    try:
        from airflow.sdk.exceptions import AirflowRescheduleException
    except ImportError:  # before the task SDK held it
        from airflow.exceptions import AirflowRescheduleException  # type: ignore[attr-defined,no-redef,unused-ignore]
    return AirflowRescheduleException  # type: ignore[no-any-return,unused-ignore]
