"""Keep data sources, charts, dashboards and workflows as code: export what exists, plan, then apply.

The guides: :doc:`/guides/apply-definitions`, :doc:`/guides/export-definitions` (``docs/guides/`` in a checkout).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import (
    AnalyticsBaseOperator,
    check_templated,
    task_instance_key,
    task_step,
)

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics.definitions import Plan

__all__ = ["ApplyDefinitionsOperator", "ExportDefinitionsOperator"]

# The files (and the pinned objects, and the stale files) an export's XCom value names: a workspace split per object
# writes a file per object, and XCom holds a result, not an inventory (the folder is that); the first twenty, as a
# WARNING or an error lists, and the count.
_MOST_LISTED = 20


class ApplyDefinitionsOperator(AnalyticsBaseOperator):
    """Make the platform match definitions kept as code: read what exists, plan, then change only what differs.

    The definitions are checked in full before any request (an error names the file, the object and the field).
    The plan lists per object ``create``, ``update`` (dashboards: the fields that differ), ``unchanged``,
    ``cannot_apply`` (a chart, workflow or data source that differs: the API cannot update it) and ``not_managed``
    (on the platform, named by no definition; nothing is ever deleted). It is logged as a table. Then, unless
    ``plan_only``, the writes are sent in dependency order: a create carries an ``Idempotency-Key`` derived from
    the task instance (DAG, run, task and map index, not the try number), so a retried task creates nothing twice
    while another run or mapped instance never replays this one's creates; a dashboard update carries
    ``If-Match`` with the version the plan read, so an edit made meanwhile fails the task instead of being
    overwritten, and keeps the layout items' fields the definitions do not set (a tile's title, its settings).
    A create's answer must be the object asked for (kind and name), else the task fails. A plan with a
    ``cannot_apply`` object is not applied at all, and a WARNING names those objects (with
    ``plan_only`` too). A second run with the same definitions sends only the reads. Secrets kept in Airflow
    (``from_connection``, ``from_variable``) are read only by the apply, only from the connections and variables
    the analytics connection's ``secret_sources`` allows (``analytics_*`` by default; any other fails the plan
    before any request), and the plan names each one first (its table, and ``secrets`` in XCom).

    Two modes for teams that review changes (the guide has a DAG for each):

    - **Drift check**: ``plan_only=True, fail_on_changes=True`` fails the task (:class:`DefinitionsDrifted`,
      without retries) when applying would change anything: a create, an update, or a ``cannot_apply`` object
      (it differs too). The table is in the log and the plan in XCom under the key ``plan``.
    - **Apply what was reviewed**: ``reviewed_plan=plan_task.output`` plans again and applies only when that gives
      the same changes (every create, update and ``cannot_apply`` row: its object's id and version, the fields,
      the content to write, the secrets it reads from Airflow); otherwise the task fails
      (:class:`ReviewedPlanMoved`, without retries), listing what moved, and writes nothing.

    Returns ``{"plan": ..., "applied": ..., "links": ...}``: the plan, what was written (``None`` with
    ``plan_only``) and each created or updated dashboard's page in the platform UI (when the connection has a
    ``ui_url``).

    :param definitions: a path or glob of ``.yaml``/``.yml``/``.json`` files (relative paths are read from the
        DAG file's folder), a mapping with the sections ``data_sources``, ``charts``, ``dashboards`` and
        ``workflows``, or a list of those (templated).
    :param plan_only: stop after the plan (default ``False``).
    :param fail_on_changes: with ``plan_only``, fail the task when the plan has anything to change (the drift
        check); needs ``plan_only=True``.
    :param reviewed_plan: a plan task's return value (``plan_task.output``; templated): apply only if planning
        again gives the same changes. Not with ``plan_only``.
    :param list_not_managed: log every platform object no definition names, one line per kind with every name
        (the table shows five per kind); off by default, since a workspace may hold thousands.
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("definitions", "reviewed_plan")
    template_fields_renderers = {"definitions": "json", "reviewed_plan": "json"}
    ui_color = "#fef7e0"

    def __init__(
        self,
        *,
        definitions: str | PurePath | Mapping[str, Any] | Sequence[str | PurePath | Mapping[str, Any]],
        plan_only: bool = False,
        fail_on_changes: bool = False,
        reviewed_plan: Any = None,
        list_not_managed: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.definitions = definitions
        self.plan_only = plan_only
        self.fail_on_changes = fail_on_changes
        self.reviewed_plan = reviewed_plan
        self.list_not_managed = list_not_managed

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        self._check_modes()
        plan = self.hook.plan_definitions(self._located(self.definitions))
        result: dict[str, Any] = {"plan": plan.to_dict(), "applied": None, "links": {}}
        self._warn_blocked(plan)
        if self.list_not_managed:
            self._log_not_managed(plan)
        if self.plan_only:
            if self.fail_on_changes and (plan.writes or plan.blocked):
                context["ti"].xcom_push(key="plan", value=result["plan"])
                raise operators._runtime.DefinitionsDrifted(
                    f"{plan.summary()}: the platform and the definitions differ (the table above says how); the "
                    "plan is in XCom under the key 'plan'. Apply the definitions, or change them to match",
                    plan=result["plan"],
                )
            self.log.info("plan_only=True: nothing applied")
            return result
        if self.reviewed_plan is not None:
            moved = operators._runtime.moved_since(self.reviewed_plan, result["plan"])
            if moved:
                raise operators._runtime.ReviewedPlanMoved(
                    "The plan made now is not the reviewed one, so nothing was written; review the new plan (its"
                    " table is above):\n  " + "\n  ".join(moved),
                    moved=moved,
                )
            self.log.info("The plan made now is the reviewed one: applying it")
        # Same for every try of this task instance (a retry replays the first try's creates), different for any
        # other run or mapped instance: the platform keeps keys for 24 hours, longer than one run.
        applied = self.hook.apply_plan(plan, key_seed=task_instance_key(context, "definitions"))
        result["applied"] = applied.to_dict()
        for item in applied.written:
            url = self.ui_link(f"dashboards/{item.id}") if item.kind == "dashboard" else None
            if url:  # keyed by the name as the plan shows it: output, masked (a name may hold a secret)
                shown = operators._runtime.scrub_text(item.name)
                result["links"][shown if shown == item.name else f"{shown} ({item.id})"] = url
                self.log.info("Dashboard %r (%s): %s", item.name, item.action, url)
        return result

    def _check_modes(self) -> None:
        """Refuse, before any request, a combination of modes that cannot mean what it says."""
        if self.fail_on_changes and not self.plan_only:
            raise operators._runtime.AnalyticsInputError(
                "fail_on_changes=True needs plan_only=True: it is the drift check, which applies nothing (an "
                "apply makes the changes instead of failing on them)"
            )
        if self.reviewed_plan is not None and self.plan_only:
            raise operators._runtime.AnalyticsInputError(
                "reviewed_plan is for the apply task after the review: give it to a task without plan_only"
            )
        check_templated(self.reviewed_plan, "reviewed_plan")
        if self.reviewed_plan is not None:
            operators._runtime.check_reviewed(self.reviewed_plan)

    def _log_not_managed(self, plan: Plan) -> None:
        """One INFO line per kind naming every platform object no definition names (``list_not_managed``)."""
        for kind, label in operators._runtime.LABELS.items():
            found = [c for c in plan.changes if c.kind == kind and c.action == "not_managed"]
            if found:
                named = ", ".join(f"{operators._runtime.one_line(c.name)!r} ({c.id})" for c in found)
                self.log.info("Not managed by these definitions: %d %s(s): %s", len(found), label, named)

    def _warn_blocked(self, plan: Plan) -> None:
        """One WARNING naming the plan's ``cannot_apply`` objects, whatever the mode.

        A review step (``plan_only``) succeeds with such a plan, and its table logs at INFO: without this line a
        green task would hide that the apply after it is refused.
        """
        if not plan.blocked:
            return

        named = ", ".join(
            f"{operators._runtime.LABELS[change.kind]} {operators._runtime.one_line(change.name)!r}"
            for change in plan.blocked
        )
        self.log.warning(
            "%d object(s) of the plan cannot be applied: %s. They differ from the platform's and the API has no "
            "update for them, so an apply of this plan is refused before any write; the plan's table says what "
            "to change for each",
            len(plan.blocked),
            named,
        )

    def _located(self, definitions: Any) -> Any:
        """Relative paths read from the DAG file's folder, as Airflow reads templates: a worker's working
        directory is not the DAG folder."""
        if isinstance(definitions, (list, tuple)):
            return [self._located(item) for item in definitions]
        folder = getattr(self.get_dag(), "folder", None)
        if isinstance(definitions, (str, PurePath)) and folder and not PurePath(definitions).is_absolute():
            return str(PurePath(folder, definitions))
        return definitions

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the objects the apply created or updated (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, "apply_definitions")


class ExportDefinitionsOperator(AnalyticsBaseOperator):
    """Write the workspace's objects, or some of them, as definition files that plan as unchanged against it.

    The start of definitions kept as code: export, commit the files, then plan and apply them with
    :class:`ApplyDefinitionsOperator`. Four listings are sent (one per kind, every page), nothing else. Files are
    YAML, one per kind (``charts.yaml``) or one per object (``charts/revenue.yaml``), each written whole or not
    at all; objects sorted by name and keys in a fixed order, so that a re-export of an unchanged workspace
    writes the same bytes and a changed one diffs cleanly. A chart names its data source and a dashboard's
    layout its charts by name. Secrets are never written: each is a ``from_connection`` or ``from_variable``
    reference to an Airflow connection or variable to create, and a value the platform holds in a reference's
    shape is written as the literal ``{$literal: ...}``, which an apply sends as it is. Names the platform shares
    are exported with each object's ``id``. Both, and anything that would not plan as unchanged, are logged at
    WARNING.

    What it writes is what an apply reads: every file is read back by the apply's own reader, within its limits,
    before any is written, and an export an apply would refuse (a file over 10 MiB, a text no file can carry)
    fails naming what to change, with nothing written. Links inside the destination are not followed. Before any
    request, the folder is looked at for the exported sections, in both layouts: a file there that no export
    wrote, or that was edited since (each exported file's header holds the digest of what follows it), fails the
    task naming it unless ``overwrite=True``, since the export would replace it or an apply would read it beside
    the export's own.

    Returns ``{"files": [...], "files_written": n, "counts": {section: objects}, "pinned": [...], "pinned_found": n,
    "stale": [...], "stale_found": n}``: the first 20 files written (in the order written: by section, then by
    name) and how many were written in all (a workspace split per object writes a file per object, and XCom is no
    place for thousands of paths: the folder lists them), how many objects each section holds, the first 20
    objects exported with their ids (``kind``, ``name``, ``id``) and how many there were, and the first 20 files of
    the exported sections, in either layout, that this export did not write, left as they are (an object renamed
    or gone since an earlier export, the other ``split_by``'s files, or, with ``overwrite=True``, files someone
    else wrote), which an apply of the folder would read too, and how many.

    :param destination: the folder to write to: a local path, or a URI such as ``s3://bucket/definitions/`` (end a
        folder that does not exist yet with ``/``) (templated). An export's own files of the same names are
        replaced.
    :param kinds: which sections: ``data_sources``, ``charts``, ``dashboards``, ``workflows`` (default: all)
        (templated).
    :param names: only the objects of these names (default: every object) (templated).
    :param split_by: ``kind`` (one file per section, default) or ``object`` (a folder per section, a file per
        object).
    :param overwrite: write even though the folder holds files of the exported sections that no export wrote (or
        that were edited since): those of the same names are replaced, the others left beside the export
        (default ``False``: the task fails, naming them, before any request).
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    template_fields = ("destination", "kinds", "names")
    ui_color = "#fef7e0"

    def __init__(
        self,
        *,
        destination: Any,
        kinds: Sequence[str] | None = None,
        names: Sequence[str] | None = None,
        split_by: str = "kind",
        overwrite: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.destination = destination
        self.kinds = kinds
        self.names = names
        self.split_by = split_by
        self.overwrite = overwrite

    @task_step
    def execute(self, context: Context) -> dict[str, Any]:
        runtime = operators._runtime
        if self.split_by not in runtime.SPLITS:
            raise runtime.AnalyticsInputError(
                f"split_by must be one of {', '.join(map(repr, runtime.SPLITS))}, got {self.split_by!r}"
            )
        if not isinstance(self.overwrite, bool):
            raise runtime.AnalyticsInputError(f"overwrite must be True or False, got {self.overwrite!r}")
        kinds, _ = runtime.checked_filters(self.kinds, self.names)  # before the destination is touched
        where = runtime.Destination.parse(self.destination)
        if not where.is_folder:
            raise runtime.AnalyticsInputError(
                f"destination {self.destination!r} must be a folder: end it with '/' (the export writes a file per"
                f" {self.split_by})"
            )
        where.prepare()
        sections = [runtime.SECTIONS[kind] for kind in kinds]
        found = runtime.survey(where.path, sections, runtime.written_by_an_export, runtime.MAX_FILE_BYTES)
        self._check_folder(where, found)
        definitions = self.hook.export_definitions(self.kinds, self.names)
        files = []
        for file in runtime.definition_files(definitions, self.split_by):
            files.append(where.uri_of(runtime.write_beneath(where.path, file.path.split("/"), file.data)))
        self.log.info("Wrote %d definition file(s) to %s", len(files), where.uri_of(where.path))
        written = set(files)
        replaced = [uri for uri in (where.uri_of(path) for path, _ in found.others) if uri in written]
        if replaced:
            self.log.warning(
                "overwrite=True: replaced %d file(s) that no export wrote or that were edited since: %s",
                len(replaced),
                _first(replaced),
            )
        pinned = [
            {"kind": section, "name": entry["name"], "id": entry["id"]}
            for section, entries in definitions.items()
            for entry in entries
            if "id" in entry
        ]
        there = [*found.exported, *(path for path, _ in found.others)]
        stale = sorted(uri for uri in (where.uri_of(path) for path in there) if uri not in written)
        if stale:
            self.log.warning(
                "%d file(s) of the exported sections were not written by this export (an object renamed or gone"
                " since an earlier one, the other split_by's files?): %s. An apply of the folder reads them too,"
                " and would create their objects again or define them twice: remove them if so",
                len(stale),
                _first(stale),
            )
        counts = {section: len(entries) for section, entries in definitions.items()}
        return {
            "files": files[:_MOST_LISTED],
            "files_written": len(files),
            "counts": counts,
            "pinned": pinned[:_MOST_LISTED],
            "pinned_found": len(pinned),
            "stale": stale[:_MOST_LISTED],
            "stale_found": len(stale),
        }

    def _check_folder(self, where: Any, found: Any) -> None:
        """Refuse, before any request, a section folder that is a link, and (unless ``overwrite``) files of the
        exported sections that no export wrote."""
        runtime = operators._runtime
        if found.linked_folders:
            raise runtime.AnalyticsInputError(
                f"{_first([where.uri_of(path) for path in found.linked_folders])}: is a link, and the export does not"
                " follow links inside its destination (its files would land elsewhere): remove the link, or export"
                " to the folder it points to"
            )
        blocking = [
            f"{where.uri_of(path)} ({what})" for path, what, layout in found.in_the_way if layout == self.split_by
        ]
        if blocking:  # overwrite=True replaces files, never a folder (nor a file with a folder)
            where_it_writes = "writes the file" if self.split_by == "kind" else "writes files into the folder"
            raise runtime.AnalyticsInputError(
                f"{_first(blocking)}: the export {where_it_writes} of that name (split_by={self.split_by!r}), which"
                " no file can replace: move it, or export to another folder"
            )
        if found.others and not self.overwrite:
            named = [f"{where.uri_of(path)} ({what})" for path, what in found.others]
            raise runtime.AnalyticsInputError(
                f"destination {where.uri_of(where.path)} holds {len(named)} file(s) of the exported sections that no"
                f" export wrote, or that were edited since: {_first(named)}. The export would replace those of its"
                " own names, and an apply of the folder would read the others beside it: move them, or pass"
                " overwrite=True to replace them"
            )


def _first(items: Sequence[str]) -> str:
    """The first :data:`_MOST_LISTED` of ``items`` (paths: each on one line), and how many more."""
    more = len(items) - _MOST_LISTED
    shown = (operators._runtime.one_line(item) for item in items[:_MOST_LISTED])
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
