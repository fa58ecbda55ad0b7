"""A headless browser for the report-page tests: Debian's ``chromium-headless-shell`` driven over the
DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages ended by NUL on file descriptors 3
and 4), so no driver package and no network are needed.

``scripts/setup_browser.sh`` installs the browser and ``fonts-noto-cjk``; :func:`find_browser` finds it
(``$NLSIM_BROWSER`` first).

Example (not run here: it needs the browser)::

    with Browser() as b:
        b.open("file:///tmp/report/index.html")
        b.evaluate("document.title")
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "headless_shell")


def find_browser() -> str | None:
    """The browser to drive: ``$NLSIM_BROWSER``, else the first of :data:`CANDIDATES` on ``PATH``."""
    forced = os.environ.get("NLSIM_BROWSER")
    if forced:
        return forced
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_browser() -> None:
    """Skip the calling test when no browser is installed (fail it on CI, where test.sh installs one)."""
    import pytest

    if find_browser() is None:
        message = "no headless browser: run scripts/setup_browser.sh (test.sh does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless browser process with one page. ``env`` is added to the browser's environment (e.g. a
    ``FONTCONFIG_FILE`` that hides fonts)."""

    def __init__(self, width: int = 1280, height: int = 900, env: dict[str, str] | None = None) -> None:
        exe = find_browser()
        if exe is None:
            raise BrowserError("no headless browser found: run scripts/setup_browser.sh")
        self.profile = tempfile.mkdtemp(prefix="nlsim-browser-")
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def fds() -> None:  # in the child: the browser reads commands on fd 3 and writes answers on fd 4
            r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)  # out of the way of 3 and 4 first
            w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = [
            exe,
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-features=Translate,MediaRouter",
            "--allow-file-access-from-files",
            f"--user-data-dir={self.profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=fds,
            close_fds=False,  # fds 3 and 4 must reach the browser; nlsim's own fds are close-on-exec
            env={**os.environ, **(env or {})},
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "DOM", "CSS"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    # --- protocol ------------------------------------------------------------------------------------

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.poll() else ""
                raise BrowserError(f"no answer from the browser (exit {self.proc.poll()}): {err}")
            ready, _, _ = select.select([self._r], [], [], 0.2)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise BrowserError("the browser closed its pipe")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer (events that arrive meanwhile are kept)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            answer = self._read(timeout)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for k, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(k)
        while True:
            e = self._read(timeout)
            if e.get("method") == method:
                return e
            self.events.append(e)

    # --- page ----------------------------------------------------------------------------------------

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values)."""
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise BrowserError(f"{expression!r}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def type_text(self, selector: str, text: str) -> None:
        """Focus ``selector`` and type ``text`` key by key (keyDown/char/keyUp, as a keyboard would)."""
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        for ch in text:
            self.call("Input.dispatchKeyEvent", type="keyDown", text=ch, unmodifiedText=ch, key=ch)
            self.call("Input.dispatchKeyEvent", type="keyUp", key=ch)

    def platform_fonts(self, selector: str) -> list[dict[str, Any]]:
        """The fonts the browser used to draw the text of ``selector`` (family, glyph count)."""
        root = self.call("DOM.getDocument", depth=0)["root"]["nodeId"]
        node = self.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        if not node:
            raise BrowserError(f"no element {selector!r}")
        return self.call("CSS.getPlatformFontsForNode", nodeId=node)["fonts"]

    def screenshot(self, path: str | Path, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            w, h = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            params["clip"] = {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
        data = self.call("Page.captureScreenshot", timeout=60, **params)["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call("Browser.close", timeout=5)
            except BrowserError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
