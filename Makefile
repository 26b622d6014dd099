# Everything a fresh machine with only python3 and make needs: `make test`, `make demo`.
PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
# Bytecode is cached in one folder outside the sources (make clean removes it). A machine that sets
# PYTHONDONTWRITEBYTECODE (this one does) otherwise has every process compile every module it imports from source
# again: each pytest worker, each `airflow` command a test or a deployment starts, each child interpreter.
# make test-compat's Airflow 3.2.2 suite took 248 s without the cache, 153 s with it (written during the run).
export PYTHONPYCACHEPREFIX := $(CURDIR)/.cache/pycache
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install lint typecheck pytest test test-compat demo e2e soak clean bench dist dist-releases docs

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.installed: pyproject.toml uv.lock airflow_provider_analytics/__init__.py | $(UV)
	$(UV) sync --frozen --python $(PYTHON)
	touch $@

install: $(VENV)/.installed

# lint-imports: the runtime package's layers and what each may import, declared in pyproject.toml's [tool.importlinter]
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: install
	$(BIN)/mypy

# The suite runs in PYTEST_WORKERS processes (pytest-xdist): it spends much of its time waiting on sockets and
# subprocesses, so on two cores three processes keep both busy (make test-compat's Airflow 3.2.2 suite: 349 s
# with two, 248 s with three, 260 s with four). PYTEST_WORKERS=0 runs it in one process.
# Two runs (tests/support/airflow_free.py): the tests of the layers that import no Airflow, in processes where
# Airflow cannot be imported (one that reaches it fails), then every other test, the part make test-compat
# repeats on each release. Together they are the whole suite, each test once.
PYTEST_WORKERS ?= 3
# The shared rate limiter's tests run a real redis-server (tests/support/redis_server.py), as make e2e does.
pytest: install
	@if ! command -v redis-server >/dev/null; then \
		echo "installing redis-server (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	fi
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal --airflow-free=only
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal --airflow-free=exclude

test: lint typecheck pytest

# The tests that touch Airflow on the other releases and Python versions the README claims, one venv each under
# .compat/ (tools/compat.py); the Airflow-free ones ran once in make test, and the table counts them.
test-compat: install
	$(BIN)/python tools/compat.py --uv $(UV) -- -n $(PYTEST_WORKERS) --dist worksteal

# The examples need the provider, Airflow and the sandbox, not the test and documentation tools: their own venv,
# from the same uv.lock without the default dependency groups (131 packages instead of 252).
DEMO_VENV := .venv-demo
$(DEMO_VENV)/.installed: pyproject.toml uv.lock airflow_provider_analytics/__init__.py | $(UV)
	UV_PROJECT_ENVIRONMENT=$(DEMO_VENV) $(UV) sync --frozen --no-default-groups --extra sandbox --python $(PYTHON)
	touch $@

demo: $(DEMO_VENV)/.installed
	$(DEMO_VENV)/bin/python tools/demo.py

# A real deployment on loopback (Postgres, api-server, scheduler, dag-processor, triggerer; with
# EXECUTOR=celery also Redis, the connection's rate limit store too, and two Celery workers): see
# docs/deployment.md. AIRFLOW=2.11.2 runs that
# release (webserver, scheduler, triggerer) from its make test-compat venv; empty: .venv's Airflow 3.3.2.
EXECUTOR ?= local
AIRFLOW ?=
e2e: install
	@if [ "$(EXECUTOR)" = celery ] && ! command -v redis-server >/dev/null; then \
		echo "installing redis-server (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	fi
	cd tools/e2e && ../../$(BIN)/python run.py --executor $(EXECUTOR) --airflow "$(AIRFLOW)" --uv ../../$(UV)

# Benchmarks (bench/README.md): import cost, a 1 GiB download (to disk and to S3), thousands of waits in one triggerer loop,
# and waits on one token under a rate limit, in one process and in 16 sharing a Redis store or not. Writes
# bench/results/; about 25 minutes. Longer windows and every process count: bench/triggerer.py and
# bench/ratelimit.py without --quick.
bench: install
	@if ! command -v redis-server >/dev/null; then \
		echo "installing redis-server (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	fi
	$(BIN)/python bench/imports.py
	$(BIN)/python bench/download.py
	$(BIN)/python bench/object_storage.py
	$(BIN)/python bench/triggerer.py --quick
	$(BIN)/python bench/ratelimit.py --quick
	$(BIN)/python bench/observability.py
	$(BIN)/python bench/store_cost.py

# The sdist and the wheel in dist/, checked: reproducible, twine and check-wheel-contents, what is inside
# (tools/dist_check.py). About 15 s.
dist: | $(UV)
	$(PYTHON) tools/dist_check.py --uv $(UV)

# The wheel of make dist installed as users get it: two clean venvs with uv.lock's versions (with and without
# the sandbox extra), then two example DAGs run with it on each supported Airflow release, two releases at a
# time. About 3.5 minutes on 2 cores once uv's cache holds every release; ONLY=2.11.2/3.11 runs that release
# alone. CI runs it.
ONLY ?=
dist-releases: | $(UV)
	$(PYTHON) tools/dist_check.py --uv $(UV) --releases $(if $(ONLY),--only $(ONLY))

# The documentation site into build/docs/html (open index.html): Sphinx, MyST and sphinx-autoapi from uv.lock.
# Warnings are errors (-W) and every cross-reference must resolve (-n); -E reads every page afresh, so a warning
# in a page that did not change is never skipped. Then every public class and guide page is checked to be there.
# About a minute on 2 cores.
DOCS_SITE := build/docs/html
docs: install
	rm -rf $(DOCS_SITE) docs/api
	$(BIN)/sphinx-build -E -n -W --keep-going -q -b html docs $(DOCS_SITE)
	$(BIN)/python tools/docs_site_check.py $(DOCS_SITE)
	@echo "The site: $(DOCS_SITE)/index.html"

clean:
	rm -rf $(VENV) $(DEMO_VENV) $(TOOLS) .cache .mypy_cache .ruff_cache build/docs docs/api

# A day of production in an hour (docs/deployment.md, "make soak"): the Celery deployment of make e2e under
# continuous load, seeded platform faults, a token rotation and restarts; checks that nothing is lost and memory
# stays flat. SOAK_MINUTES=5 for a short run (about 10 minutes in all); reports under soak/results/ (60 min) or .soak/.
# Every process paces the token through the rate limit store (the broker's Redis); SOAK_STORE=no: each alone.
SOAK_MINUTES ?= 60
SOAK_STORE ?= yes
soak: install
	@if ! command -v redis-server >/dev/null; then \
		echo "installing redis-server (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	fi
	cd tools/soak && ../../$(BIN)/python soak.py --minutes $(SOAK_MINUTES) $(if $(filter no,$(SOAK_STORE)),--no-store)
