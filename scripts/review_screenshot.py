"""Take the screenshot of the report page's review queue shown in docs/operations.md.

Opens a report's ``index.html`` in Debian's headless Chromium (``scripts/setup_browser.sh``) with
Playwright, marks the first near misses by key as an editor would (``j``, then a level key), and saves the
review panel as a PNG.

    python scripts/review_screenshot.py REPORT_DIR docs/review-queue.png [--keys 2132]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a report folder (with index.html)")
    parser.add_argument("out", type=Path, help="PNG to write")
    parser.add_argument("--keys", default="2132", help="level keys pressed on the first near misses")
    parser.add_argument("--browser", default=shutil.which("chromium-headless-shell"), help="the browser")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=860)
    args = parser.parse_args()
    if not args.browser:
        print("no chromium-headless-shell: run scripts/setup_browser.sh", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.browser)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto((args.report / "index.html").resolve().as_uri())
        page.evaluate("localStorage.clear()")
        page.reload()
        page.fill("#rv-annotator", "desk editor")
        page.locator("#rv-near tr.rv-row td.t").first.click()
        for key in args.keys:
            page.keyboard.press(key)
        page.evaluate("document.getElementById('review').scrollIntoView()")
        page.screenshot(path=str(args.out))
        browser.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
