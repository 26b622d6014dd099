"""Names and modules that moved, still importable from the old path for a release, with a warning (internal).

``moved``/``moved_names`` answer for some names of a module that stays; ``moved_module`` for every name of a
module that became another (``wire/endpoints.py`` is ``wire/_endpoints.py``: the old file keeps only a
``__getattr__``).

The warning is a plain ``DeprecationWarning``: Airflow's ``AirflowProviderDeprecationWarning`` lives in
Airflow core's ``airflow.exceptions``, which common-compat does not bridge and a task-SDK-only worker may lack;
it is a ``DeprecationWarning`` too, so a filter on that catches both.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved", "moved_module", "moved_names"]


def moved_names(module: str, home: str, removal: str = "2.0.0", *, wrapped: bool = False) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) that answers for the names in ``home.__all__``, warning on each lookup.

    ``home`` is imported on such a lookup only: the old module may be on the DAG-parse path (operator modules
    forward the task failures their names used to export), and the import system's own lookups (``__path__``)
    never import it.

    :param module: the old module's ``__name__``.
    :param home: the module that defines the names now, under the same names (:func:`moved` renames).
    :param removal: the release that removes them from the old module.
    :param wrapped: called from the old module's own ``__getattr__`` (one more frame before the importing line).
    """

    def __getattr__(name: str) -> Any:
        dunder = name.startswith("__") and name.endswith("__")
        if not dunder and name in getattr(importlib.import_module(home), "__all__", ()):
            return _forward(module, name, home, name, removal, wrapped)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def moved(
    module: str, homes: Mapping[str, str], removal: str = "2.0.0", *, wrapped: bool = False
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names moved to several modules: ``{old name: "new.module:NewName"}``.

    :param module: the old module's ``__name__``.
    :param homes: where each old name lives now, as ``module:name``.
    :param removal: the release that removes them from the old module.
    :param wrapped: called from the old module's own ``__getattr__`` (one more frame before the importing line).
    """
    where = dict(homes)

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, _, new = where[name].partition(":")
        return _forward(module, name, home, new, removal, wrapped)

    return __getattr__


def _forward(module: str, name: str, home: str, new: str, removal: str, wrapped: bool) -> Any:
    """Warn that ``module.name`` moved to ``home.new`` (pointing at the importing line), and return it."""
    target = home if new == name else f"{home} (as {new})"
    warnings.warn(
        f"importing {name} from {module} is deprecated and stops working in {removal}; import it from {target}",
        DeprecationWarning,
        # this function, the __getattr__ made here (and the module's own, when wrapped), then the importing line
        stacklevel=4 if wrapped else 3,
    )
    return getattr(importlib.import_module(home), new)


def moved_module(old: str, new: str, removal: str = "2.0.0") -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for a module that moved as a whole: every name of ``new``, with a warning.

    Dunder names (``__path__``, ``__wrapped__``, ...) are the old module's own and never forwarded; any other
    name ``new`` lacks raises ``AttributeError`` as before, with no warning.

    :param old: the old module's ``__name__``.
    :param new: the module's name now.
    :param removal: the release that removes the old module.
    """

    def __getattr__(name: str) -> Any:
        home = None if name.startswith("__") and name.endswith("__") else importlib.import_module(new)
        if home is None or not hasattr(home, name):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"importing {name} from {old} is deprecated and stops working in {removal}; import it from {new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(home, name)

    return __getattr__
