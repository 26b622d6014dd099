"""Names that moved to another module, still importable from the old one for a release, with a warning.

The warning is a plain ``DeprecationWarning``: Airflow's ``AirflowProviderDeprecationWarning`` lives in
Airflow core's ``airflow.exceptions``, which common-compat does not bridge and a task-SDK-only worker may lack;
it is a ``DeprecationWarning`` too, so a filter on that catches both.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["moved", "moved_names"]


def moved_names(
    module: str, home: str, names: Iterable[str] | Mapping[str, str], removal: str = "2.0.0"
) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) that answers for names moved to ``home``, warning on each lookup.

    :param module: the old module's ``__name__``.
    :param home: the module that defines the names now.
    :param names: the names that moved; a mapping gives each old name its new one (a rename).
    :param removal: the release that removes them from the old module.
    """
    renames = dict(names) if isinstance(names, Mapping) else {name: name for name in names}
    return moved(module, {old: f"{home}:{new}" for old, new in renames.items()}, removal)


def moved(module: str, homes: Mapping[str, str], removal: str = "2.0.0") -> Callable[[str], Any]:
    """A module ``__getattr__`` for names moved to several modules: ``{old name: "new.module:NewName"}``.

    :param module: the old module's ``__name__``.
    :param homes: where each old name lives now, as ``module:name``.
    :param removal: the release that removes them from the old module.
    """
    where = dict(homes)

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, _, new = where[name].partition(":")
        target = home if new == name else f"{home} (as {new})"
        warnings.warn(
            f"importing {name} from {module} is deprecated and stops working in {removal}; import it from {target}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), new)

    return __getattr__
