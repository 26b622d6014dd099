"""``make dist`` and ``make dist-releases``: build the sdist and the wheel into ``dist/`` and check them.

``make dist`` (steps 1 and 2, about 15 s) is what someone who wants the wheel runs; ``make dist-releases``
(steps 1 to 4, minutes: a clean Airflow per release) installs it as users get it, and CI runs it.

1. Builds both with ``uv build`` (the wheel from the sdist, so the sdist is proven complete), dated by the
   provider info's ``source-date-epoch``, and builds the wheel a second time to prove it reproducible.
2. Checks the metadata (``twine check --strict``, ``check-wheel-contents``, name, version, extras) and
   what is inside (the package, ``py.typed`` and the license; no tests, examples or bytecode in the wheel).
3. Installs the wheel into two clean virtualenvs, with the versions of ``uv.lock`` as constraints:
   - without extras: ``airflow providers list`` shows the provider and its version, every runtime module
     imports, and, once the server stack Airflow itself brought is removed, the sandbox says what to install;
   - with every extra: every module imports, and the sandbox starts, serves the installed hook (whose
     User-Agent carries the same version), and stops on SIGTERM sent to its pid.
4. For each release of tools/compat.py's ``MATRIX``: a clean venv with that Airflow, its holds and the wheel
   (resolved as ``make test-compat`` resolves), a throw-away ``AIRFLOW_HOME``, the sandbox, and ``airflow dags
   test`` of two example DAGs, every task succeeded and the downloaded report matching the platform's sha256
   (tools/dist_releases.py); a table at the end. ``--only 2.11.2/3.11`` runs steps 1, 2 and that release.

Steps 3 and 4 run with ``--releases`` (``make dist-releases``) or ``--only``.

Everything but ``dist/`` lives in a private temporary folder, removed at the end, also on failure.
Standard library only: it runs with the machine's ``python3`` before any project venv exists.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import secrets
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import zipfile
from email.parser import Parser
from pathlib import Path

from compat import Combination
from dist_releases import ReleaseCheck, ReleaseResult, choose_combinations, print_release_table
from dist_support import DISTRIBUTION, PACKAGE, ROOT, SANDBOX, CheckFailed, clean_env, run, sandbox, sha256

TOOLS = {"twine": "twine==7.0.0", "check-wheel-contents": "check-wheel-contents==0.6.3"}
INSTALL_HINT = 'pip install "airflow-provider-analytics[sandbox]"'
# Airflow needs these itself, so they are in a venv without the extra too; removing them shows what a
# user without them (a future Airflow, a trimmed image) is told.
SERVER_STACK = ("uvicorn", "fastapi")


def _literal(path: Path, name: str) -> object:
    """The literal value bound to ``name`` (an assignment or a dict key) in a Python source file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == name for target in node.targets):
            return ast.literal_eval(node.value)
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == name:
                    return ast.literal_eval(value)
    raise CheckFailed(f"{path.relative_to(ROOT)} defines no {name!r}")


class DistCheck:
    """The whole check, one step per method; ``notes`` collects the summary lines.

    :param uv: the uv executable (the project's tools venv).
    :param work: the private temporary folder.
    """

    def __init__(self, uv: Path, work: Path) -> None:
        self.uv = uv.resolve()
        self.work = work
        self.dist = ROOT / "dist"
        self.version = str(_literal(ROOT / PACKAGE / "__init__.py", "__version__"))
        self.epoch = int(str(_literal(ROOT / PACKAGE / "provider_info.py", "source-date-epoch")))
        self.notes: list[str] = []

    def build(self) -> tuple[Path, Path]:
        """Build the sdist, then the wheel from it; build the wheel again from the sdist and compare."""
        self.dist.mkdir(exist_ok=True)
        for old in [*self.dist.glob(f"{PACKAGE}-*.whl"), *self.dist.glob(f"{PACKAGE}-*.tar.gz")]:
            old.unlink()
        env = clean_env(SOURCE_DATE_EPOCH=str(self.epoch))
        run([self.uv, "build", "--quiet", "--out-dir", self.dist], cwd=ROOT, env=env)
        wheel = self.dist / f"{PACKAGE}-{self.version}-py3-none-any.whl"
        sdist = self.dist / f"{PACKAGE}-{self.version}.tar.gz"
        built = sorted(path.name for path in self.dist.glob(f"{PACKAGE}-*"))
        if built != sorted([wheel.name, sdist.name]):
            raise CheckFailed(f"expected {wheel.name} and {sdist.name} for version {self.version}, built {built}")
        again = self.work / "rebuild"
        run([self.uv, "build", "--quiet", "--wheel", "--out-dir", again, sdist], cwd=self.work, env=env)
        if sha256(again / wheel.name) != sha256(wheel):
            raise CheckFailed("the wheel is not reproducible: a second build from the sdist differs")
        self.notes.append(f"built   {sdist.name} ({sdist.stat().st_size // 1024} KiB)")
        self.notes.append(f"built   {wheel.name} ({wheel.stat().st_size // 1024} KiB), sha256 {sha256(wheel)}")
        self.notes.append("ok      the wheel is reproducible (rebuilt from the sdist: same sha256)")
        return sdist, wheel

    def check_metadata(self, sdist: Path, wheel: Path) -> list[str]:
        """Twine and check-wheel-contents, then name, version and extras; returns the extras."""
        tool_run: list[str | Path] = [self.uv, "tool", "run", "--quiet", "--from"]
        run([*tool_run, TOOLS["twine"], "twine", "check", "--strict", sdist, wheel], cwd=self.work)
        run([*tool_run, TOOLS["check-wheel-contents"], "check-wheel-contents", wheel], cwd=self.work)
        with zipfile.ZipFile(wheel) as archive:
            metadata = Parser().parsestr(archive.read(f"{PACKAGE}-{self.version}.dist-info/METADATA").decode())
        if (metadata["Name"], metadata["Version"]) != (DISTRIBUTION, self.version):
            raise CheckFailed(f"wheel metadata says {metadata['Name']} {metadata['Version']}")
        extras = metadata.get_all("Provides-Extra") or []
        sandbox_requirements = [line for line in metadata.get_all("Requires-Dist") or [] if "'sandbox'" in line]
        if "sandbox" not in extras or not sandbox_requirements:
            raise CheckFailed(f"the wheel declares no 'sandbox' extra (extras: {extras})")
        self.notes.append(f"ok      twine check --strict, check-wheel-contents; extras: {', '.join(extras)}")
        return extras

    def check_contents(self, sdist: Path, wheel: Path) -> None:
        """The wheel holds the package (all of it), ``py.typed`` and the license, and nothing else."""
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
        dist_info = f"{PACKAGE}-{self.version}.dist-info/"
        problems = [name for name in names if not name.startswith((f"{PACKAGE}/", dist_info))]
        problems += [name for name in names if name.endswith((".pyc", ".pyo")) or "__pycache__" in name]
        tracked = run(["git", "ls-files", PACKAGE], cwd=ROOT).split()
        problems += [f"missing {path}" for path in tracked if path not in names]
        for required in (f"{PACKAGE}/py.typed", f"{dist_info}licenses/LICENSE"):
            if required not in names:
                problems.append(f"missing {required}")
        with tarfile.open(sdist) as archive:
            members = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
        problems += [
            f"sdist: {name}" for name in members if name.startswith(("tests/", "tools/", ".ci/")) or ".pyc" in name
        ]
        if f"{PACKAGE}/py.typed" not in members or not any(name.startswith("example_dags/") for name in members):
            problems.append("sdist: py.typed or example_dags/ missing")
        if problems:
            raise CheckFailed("unexpected archive contents:\n  " + "\n  ".join(problems))
        self.notes.append(
            f"ok      wheel: {len(names)} files, the package only (py.typed, LICENSE; no tests, examples, bytecode);"
            " sdist adds docs/ and example_dags/"
        )

    def constraints(self) -> Path:
        """The runtime and extras' versions pinned in uv.lock, as a pip constraints file."""
        path = self.work / "constraints.txt"
        export: list[str | Path] = [self.uv, "export", "--frozen", "--quiet", "--no-hashes", "--no-emit-project"]
        run([*export, "--all-extras", "--no-dev", "--output-file", path], cwd=ROOT)
        return path

    def venv(self, name: str, requirements: list[str], constraints: Path) -> Path:
        """A clean virtualenv with ``requirements`` installed; returns its ``bin`` folder."""
        location = self.work / name
        run([self.uv, "venv", "--quiet", "--python", sys.executable, location], cwd=self.work)
        python = location / "bin" / "python"
        # Run from the temp folder: uv would otherwise apply this project's own [tool.uv] settings.
        install: list[str | Path] = [
            self.uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            python,
            *requirements,
            "-c",
            constraints,
        ]
        run(install, cwd=self.work)
        return location / "bin"

    def airflow_env(self, name: str) -> dict[str, str]:
        home = self.work / f"airflow-home-{name}"
        home.mkdir(exist_ok=True)
        return clean_env(AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False")

    def check_registered(self, bin_dir: Path, name: str) -> None:
        """``airflow providers list`` shows this provider with the version, and provider info agrees."""
        listing = json.loads(
            run(
                [bin_dir / "airflow", "providers", "list", "--output", "json"],
                cwd=self.work,
                env=self.airflow_env(name),
            )
        )
        versions = [row.get("version") for row in listing if row.get("package_name") == DISTRIBUTION]
        if versions != [self.version]:
            raise CheckFailed(f"airflow providers list shows {DISTRIBUTION} as {versions}, expected [{self.version!r}]")
        self.notes.append(f"ok      {name}: airflow providers list shows {DISTRIBUTION} {self.version}")

    def import_everything(self, bin_dir: Path, name: str, wheel: Path) -> dict[str, str]:
        """Import every module of the wheel from the venv (not the source tree); returns failures by module."""
        with zipfile.ZipFile(wheel) as archive:
            files = [path for path in archive.namelist() if path.startswith(f"{PACKAGE}/") and path.endswith(".py")]
        modules = sorted(path[:-3].replace("/", ".").removesuffix(".__init__") for path in files)
        probe = (
            "import importlib, importlib.metadata, json, sys\n"
            "failed, outside = {}, []\n"
            "for name in json.loads(sys.argv[1]):\n"
            "    try:\n"
            "        module = importlib.import_module(name)\n"
            "    except Exception as error:\n"
            "        failed[name] = f'{type(error).__name__}: {error}'\n"
            "        continue\n"
            "    if not module.__file__.startswith(sys.prefix):\n"
            "        outside.append(module.__file__)\n"
            f"from {PACKAGE}.provider_info import get_provider_info\n"
            f"print(json.dumps({{'failed': failed, 'outside': outside, 'metadata': "
            f"importlib.metadata.version({DISTRIBUTION!r}), 'provider_info': get_provider_info()['versions']}}))\n"
        )
        result = json.loads(
            run([bin_dir / "python", "-c", probe, json.dumps(modules)], cwd=self.work, env=self.airflow_env(name))
        )
        if result["outside"]:
            raise CheckFailed(f"{name}: modules imported from outside the venv: {result['outside'][:3]}")
        if (result["metadata"], result["provider_info"]) != (self.version, [self.version]):
            raise CheckFailed(
                f"{name}: installed metadata {result['metadata']}, provider info {result['provider_info']}"
            )
        failed: dict[str, str] = result["failed"]
        self.notes.append(f"ok      {name}: {len(modules) - len(failed)} of {len(modules)} modules import")
        return failed

    def check_missing_extra(self, bin_dir: Path) -> None:
        """Without the server stack, the command line and an import both say what to install."""
        run([self.uv, "pip", "uninstall", "--quiet", "--python", bin_dir / "python", *SERVER_STACK], cwd=self.work)
        env = self.airflow_env("base")
        done = subprocess.run(
            [bin_dir / "python", "-m", SANDBOX, "--port", "0"],
            cwd=self.work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 2 or INSTALL_HINT not in done.stderr or "Traceback" in done.stderr:
            raise CheckFailed(f"python -m {SANDBOX} without the extra: status {done.returncode}, {done.stderr!r}")
        probe = f"from {SANDBOX} import SandboxDependencyError\ntry:\n    from {SANDBOX}.server import SandboxServer\n"
        probe += "except SandboxDependencyError as error:\n    print(error)\n"
        said = run([bin_dir / "python", "-c", probe], cwd=self.work, env=env).strip()
        if INSTALL_HINT not in said:
            raise CheckFailed(f"importing the sandbox without the extra said {said!r}")
        self.notes.append(f"ok      base, without {'/'.join(SERVER_STACK)}: python -m ... exits 2 saying: {said}")

    def check_sandbox_serves(self, bin_dir: Path) -> None:
        """Start the sandbox, call it through the installed hook, check the User-Agent, stop it by pid."""
        # The admin token fixed for the sandbox and read back by the probe, as a user's script does.
        env = {**self.airflow_env("full"), "ANALYTICS_SANDBOX_ADMIN_TOKEN": secrets.token_urlsafe(32)}
        log = self.work / "sandbox.stderr"
        with sandbox(bin_dir / "python", "--speed", "fast", cwd=self.work, env=env, log=log) as (pid, connection):
            probe = textwrap.dedent(
                f"""
                import httpx, json, os
                from {PACKAGE}.hooks.analytics import AnalyticsHook
                with AnalyticsHook() as hook:  # reads AIRFLOW_CONN_ANALYTICS_DEFAULT
                    next(iter(hook.list_workflows()))
                admin = {{"Authorization": "Bearer " + os.environ["ANALYTICS_SANDBOX_ADMIN_TOKEN"]}}
                log = httpx.get({json.loads(connection)["host"]!r} + "/_sandbox/requests", headers=admin).json()["data"]
                agents = {{entry["headers"]["user-agent"] for entry in log if entry["path"].startswith("/v1/")}}
                print(json.dumps(sorted(agents)))
                """
            )
            agents = json.loads(
                run(
                    [bin_dir / "python", "-c", probe],
                    cwd=self.work,
                    env={**env, "AIRFLOW_CONN_ANALYTICS_DEFAULT": connection},
                    timeout=120,
                )
            )
            if agents != [f"{DISTRIBUTION}/{self.version}"]:
                raise CheckFailed(f"the sandbox received User-Agent {agents}, expected {DISTRIBUTION}/{self.version}")
        self.notes.append(
            f"ok      full: the sandbox served {json.loads(connection)['host']} (User-Agent {agents[0]}), stopped by"
            f" SIGTERM to pid {pid}"
        )

    def check_pytest_plugin(self, bin_dir: Path) -> None:
        """A user's pytest run gets the ``analytics_sandbox`` fixture from the installed entry point."""
        project = self.work / "user-project"
        project.mkdir()
        (project / "test_with_sandbox.py").write_text(
            textwrap.dedent(
                f"""
                from {PACKAGE}.hooks.analytics import AnalyticsHook

                def test_the_fixture_serves_the_hook(analytics_sandbox):
                    with AnalyticsHook() as hook:
                        assert next(iter(hook.list_workflows()))["id"]
                """
            )
        )
        command: list[str | Path] = [bin_dir / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        last = run(command, cwd=project, env=self.airflow_env("full"), timeout=300).strip().splitlines()[-1]
        if not last.startswith("1 passed"):
            raise CheckFailed(f"a user's pytest run with the analytics_sandbox fixture ended: {last}")
        self.notes.append(f"ok      full: a user's pytest run with the analytics_sandbox fixture: {last}")

    def run(self, combinations: list[Combination], *, lock_venvs: bool = True) -> list[ReleaseResult]:
        """Build and check the archives, then (``lock_venvs``) the two clean venvs, then each release.

        :param combinations: the releases to install the wheel next to (none: the archives only).
        :param lock_venvs: also check the two clean venvs with uv.lock's versions.
        """
        sdist, wheel = self.build()
        extras = self.check_metadata(sdist, wheel)
        self.check_contents(sdist, wheel)
        if lock_venvs:
            self.check_lock_venvs(wheel, extras)
        print("\n".join(self.notes), flush=True)
        self.notes.clear()
        # The wheel next to each supported Airflow release, running the example DAGs (tools/dist_releases.py).
        releases = ReleaseCheck(self.uv, self.work, wheel)
        return releases.check_all(combinations)

    def check_lock_venvs(self, wheel: Path, extras: list[str]) -> None:
        """The wheel in two clean venvs with uv.lock's versions: without extras, and with every extra."""
        constraints = self.constraints()
        base = self.venv("base", [str(wheel)], constraints)
        self.check_registered(base, "base")
        failed = self.import_everything(base, "base", wheel)
        runtime_failures = {name: error for name, error in failed.items() if not name.startswith(SANDBOX)}

        # pytest too: the sandbox's pytest plugin is checked in a user's pytest run.
        full = self.venv("full", [f"{wheel}[{','.join(extras)}]", "pytest"], constraints)
        self.check_registered(full, "full")
        failed_full = self.import_everything(full, "full", wheel)
        if failed_full:
            raise CheckFailed(f"with every extra, modules fail to import: {failed_full}")
        # A runtime module may need another extra (lineage needs `openlineage`): fine, as it imports with it.
        for name, error in sorted(runtime_failures.items()):
            self.notes.append(f"note    base: {name} needs an extra ({error})")
        self.check_missing_extra(base)
        self.check_sandbox_serves(full)
        self.check_pytest_plugin(full)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--uv", type=Path, default=ROOT / ".tools" / "bin" / "uv", help="the uv executable")
    parser.add_argument(
        "--releases",
        action="store_true",
        help="after the archives, install the wheel as users get it: two clean venvs with uv.lock's versions, then"
        " each release of tools/compat.py's MATRIX running example DAGs (make dist-releases)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="AIRFLOW/PYTHON",
        help="build and check the archives, then run only this release of tools/compat.py's MATRIX (repeatable),"
        " e.g. 2.11.2/3.11; skips the two venvs with uv.lock's versions",
    )
    options = parser.parse_args()
    try:
        combinations = choose_combinations(options.only) if options.releases or options.only else []
    except ValueError as error:
        parser.error(str(error))
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"  # interpreters come from the machine, as for make test-compat
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dist-check-") as work:
        # Every tool's own temporary files (uv build's locks too) go into the folder that is removed at the end.
        os.environ["TMPDIR"] = str(Path(work) / "tmp")
        (Path(work) / "tmp").mkdir()
        check = DistCheck(options.uv, Path(work))
        try:
            releases = check.run(combinations, lock_venvs=options.releases and not options.only)
        except (CheckFailed, subprocess.TimeoutExpired) as error:
            print("\n".join(check.notes), file=sys.stderr)
            print(f"FAILED  {error}", file=sys.stderr)
            return 1
    if releases:
        print_release_table(releases)
    # Everything this run made lived in its temporary folder (TMPDIR pointed there for every tool it ran), so that
    # folder is what it leaves or not. New entries of /tmp itself are not its to report: other programs (a test
    # suite, a second checkout's build) write there meanwhile, and listing them named their files as this run's.
    print(f"its temporary folder {work}: {'LEFT BEHIND' if os.path.exists(work) else 'removed'}")
    failed = [f"{r.combination.airflow}/{r.combination.python}" for r in releases if not r.ok]
    verdict = f"FAILED on {', '.join(failed)}" if failed else "checked"
    print(f"dist/ {verdict}: {DISTRIBUTION} {check.version} in {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
