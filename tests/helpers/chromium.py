"""A real headless Chromium driven over the DevTools protocol, to look at the HTML report as a
reader does: open it, click through its menu, read what a page shows (inside its iframe too) and
take a screenshot.

The protocol runs over a pipe (``--remote-debugging-pipe``: JSON messages ending in a NUL byte on
file descriptors 3 and 4), so no WebSocket client or browser-automation package is needed; the
browser is Debian's ``chromium`` (CI installs it, ``.ci/run``)."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000"]


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    """One headless Chromium with one page (a flattened DevTools session)."""

    def __init__(self, binary: str, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="lsrbench-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._resp_r, resp_w = os.pipe()

        def pipes_on_3_and_4():  # in the child: the browser reads commands on fd 3, replies on fd 4
            high_r, high_w = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 16), fcntl.fcntl(resp_w, fcntl.F_DUPFD, 16)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen([binary, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
                                      "about:blank"], preexec_fn=pipes_on_3_and_4, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(resp_w)
        self._buffer = b""
        self._next_id = 0
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=True)

    def send(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        """One DevTools command; returns its result (events in between are dropped)."""
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buffer:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no reply to {method}")
                chunk = os.read(self._resp_r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium exited while waiting for {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str, context: int | None = None):
        """The value of a JavaScript expression in the page (or in an execution context)."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        if context is not None:
            params["contextId"] = context
        result = self.send("Runtime.evaluate", params, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0, context: int | None = None):
        """Poll until the expression is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression, context)
            except RuntimeError:
                value = None
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"never true: {expression}")

    def open(self, path: Path) -> None:
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=True)
        self.wait_for("document.readyState === 'complete'")

    def click_text(self, text: str, selector: str = "a") -> None:
        """Click the first ``selector`` element whose visible text is ``text`` (as a user would)."""
        found = self.evaluate(f"""(() => {{
            const el = [...document.querySelectorAll({json.dumps(selector)})]
                .find(e => e.innerText.trim() === {json.dumps(text)});
            if (!el) return false;
            el.click();
            return true;
        }})()""")
        if not found:
            raise LookupError(f"no {selector} reading {text!r}")

    def frame_context(self, timeout: float = 30.0) -> int:
        """An execution context inside the page's (first) iframe, once it has loaded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            tree = self.send("Page.getFrameTree", session=True)["frameTree"]
            children = tree.get("childFrames") or []
            if children:
                frame = children[0]["frame"]["id"]
                world = self.send("Page.createIsolatedWorld", {"frameId": frame, "worldName": "lsrbench-test"},
                                  session=True)["executionContextId"]
                if self.evaluate("document.readyState === 'complete' && document.body !== null", world):
                    return world
            time.sleep(0.2)
        raise TimeoutError("no iframe loaded")

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:  # already gone
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._resp_r)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
