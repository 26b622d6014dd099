"""Screenshot of Airflow's connection form for the ``analytics`` type, for docs/connection.md (run by hand).

``.venv/bin/python tools/docs_screenshot.py`` migrates a throw-away ``AIRFLOW_HOME``, starts Airflow's
api-server from ``.venv`` on a free loopback port (the simple auth manager in all-admins mode: no login), starts
headless Chromium (Debian's ``chromium``) with a fresh profile and its DevTools endpoint on another free loopback
port, opens *Add Connection*, picks the type *Analytics Platform*, unfolds *Extra Fields*, and writes the dialog to
``docs/_static/connection-form.png``. When the form does not show the provider's fields, it says so and keeps
what the page showed in ``build/docs-screenshot-failed.png``.
Chromium is driven over the DevTools protocol with ``websockets`` (already in ``.venv``), so no driver is needed.
Every process it started is stopped by its pid, also on failure, and the temporary folder is removed.

CI does not run it: ``make docs`` uses the committed PNG. Run it again when the form changes.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import websockets

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
OUTPUT = ROOT / "docs" / "_static" / "connection-form.png"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1280,1500",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_url(url: str, seconds: float, process: subprocess.Popen[bytes], name: str) -> bytes:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} exited with status {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return bytes(answer.read())
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} did not answer within {seconds:.0f} s")


def stop(process: subprocess.Popen[bytes] | None) -> None:
    """Stop a process and its children (it leads its own process group) by its pid."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


class Page:
    """One browser tab driven over the DevTools protocol."""

    def __init__(self, socket_: Any) -> None:
        self.socket = socket_
        self.next_id = 0

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(await self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    async def wait_for(self, expression: str, what: str, seconds: float = 60) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.5)
        raise SystemExit(f"the page never showed {what}")

    async def click_text(self, selector: str, text: str) -> None:
        """Click, as a mouse does, the first element matching ``selector`` whose visible text is ``text``."""
        box = await self.wait_for(
            f"""(() => {{ const el = [...document.querySelectorAll({json.dumps(selector)})]
                 .find(e => e.innerText.trim() === {json.dumps(text)});
               if (!el) return null; el.scrollIntoView({{block: "center"}});
               const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""",
            f"a {selector} reading {text!r}",
        )
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    async def type_text(self, text: str) -> None:
        await self.send("Input.insertText", text=text)

    async def press(self, key: str, code: str, key_code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            await self.send("Input.dispatchKeyEvent", type=kind, key=key, code=code, windowsVirtualKeyCode=key_code)


class FormNotShown(Exception):
    """The form never showed the provider's fields; carries what the page showed.

    :param picture: a PNG of the whole page.
    :param text: the dialog's text.
    """

    def __init__(self, picture: bytes, text: str) -> None:
        super().__init__(f"the form never showed the analytics fields; it reads: {text!r}")
        self.picture = picture


async def shoot(tab_socket_url: str, airflow_url: str) -> bytes:
    """The Add Connection dialog for the analytics type, as PNG bytes.

    :param tab_socket_url: the DevTools websocket of a browser tab.
    :param airflow_url: the api-server's base URL.
    """
    async with websockets.connect(tab_socket_url, max_size=None) as connection:
        page = Page(connection)
        await page.send("Page.enable")
        await page.send("Runtime.enable")
        await page.send("Page.navigate", url=f"{airflow_url}/connections")
        await page.click_text("button", "Add Connection")
        # The form's inputs: the connection id, then the connection type's searchable select.
        inputs = "document.querySelectorAll('[role=dialog] input')"
        await page.wait_for(f"{inputs}.length >= 2", "the Add Connection form")
        await page.evaluate(f"{inputs}[0].focus()")
        await page.type_text("analytics_default")
        await page.evaluate(f"{inputs}[1].focus()")
        await page.type_text("Analytics Platform")
        await asyncio.sleep(1)
        await page.press("Enter", "Enter", 13)
        await page.wait_for("document.querySelector('[role=dialog]').innerText.includes('Base URL')", "the fields")
        await asyncio.sleep(1)
        await page.click_text("[role=dialog] button", "Extra Fields")  # the provider's fields, folded at first
        try:
            await page.wait_for(
                "document.querySelector('[role=dialog]').innerText.includes('Workspace ID')",
                "the analytics extra fields",
                seconds=20,
            )
        except SystemExit:
            shot = await page.send("Page.captureScreenshot", format="png")
            text = await page.evaluate("document.querySelector('[role=dialog]').innerText")
            raise FormNotShown(base64.b64decode(shot["data"]), str(text)) from None
        await asyncio.sleep(1)  # let the form settle (fonts, layout) before the picture
        size = await page.evaluate(
            """(() => { const d = document.querySelector('[role=dialog]'); const r = d.getBoundingClientRect();
                 return [r.x, r.y, r.width, d.scrollHeight]; })()"""
        )
        x, y, width, height = size
        await page.send("Emulation.setDeviceMetricsOverride", width=1280, height=int(y + height + 40),
                        deviceScaleFactor=1, mobile=False)  # fmt: skip
        await asyncio.sleep(1)
        clip = {"x": x, "y": y, "width": width, "height": height, "scale": 1}
        shot = await page.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
    return base64.b64decode(shot["data"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write the PNG")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium", help="the Chromium binary")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="apa-docs-screenshot-"))
    api_server: subprocess.Popen[bytes] | None = None
    browser: subprocess.Popen[bytes] | None = None
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")},
        "AIRFLOW_HOME": str(work / "airflow-home"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(work / "dags"),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
    }
    try:
        print("migrating a throw-away Airflow database ...")
        subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True)
        port, devtools_port = free_port(), free_port()
        airflow_url = f"http://127.0.0.1:{port}"
        print(f"starting the api-server on {airflow_url} ...")
        with (work / "api-server.log").open("wb") as log:
            api_server = subprocess.Popen(
                [str(BIN / "airflow"), "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        wait_for_url(f"{airflow_url}/api/v2/monitor/health", 180, api_server, "the api-server")
        print("starting headless Chromium ...")
        browser = subprocess.Popen(
            [options.chromium, *CHROMIUM_FLAGS, f"--user-data-dir={work / 'chromium-profile'}",
             "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={devtools_port}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        wait_for_url(f"http://127.0.0.1:{devtools_port}/json/version", 60, browser, "Chromium")
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{devtools_port}/json/list").read())
        tab = next(target for target in targets if target["type"] == "page")
        options.output.write_bytes(asyncio.run(shoot(tab["webSocketDebuggerUrl"], airflow_url)))
        print(f"wrote {options.output} ({options.output.stat().st_size:,} bytes)")
        return 0
    except FormNotShown as error:
        failed = ROOT / "build" / "docs-screenshot-failed.png"  # build/ is git-ignored
        failed.parent.mkdir(exist_ok=True)
        failed.write_bytes(error.picture)
        print(f"screenshot failed: {error} (the page: {failed})", file=sys.stderr)
        return 1
    except (subprocess.CalledProcessError, SystemExit, RuntimeError) as error:
        log_path = work / "api-server.log"
        if log_path.exists():
            print(log_path.read_text(errors="replace")[-3000:], file=sys.stderr)
        print(f"screenshot failed: {error}", file=sys.stderr)
        return 1
    finally:
        stop(browser)
        stop(api_server)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
