"""Take the screenshot of the report page shown near the top of the README (docs/img/report.png).

Opens a report's ``index.html`` in Debian's headless Chromium (``scripts/setup_browser.sh``) with
Playwright, as an editor first sees it (the notices, the day in brief, the first stories of the list), and
saves the top of the page as a PNG, in a palette of 256 colours to keep it small. The report of the bundled
data with the bundled zero-shot model:

    python -m nlsim dedup --corpus data/thucnews.parquet --out /tmp/shot \\
        --model multilingual-e5-small --threshold 0.93
    python scripts/screenshot.py /tmp/shot docs/img/report.png
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a report folder (with index.html)")
    parser.add_argument("out", type=Path, help="PNG to write")
    parser.add_argument("--browser", default=shutil.which("chromium-headless-shell"), help="the browser")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--open", type=int, default=1, help="how many stories of the list to open")
    args = parser.parse_args()
    page_file = args.report / "index.html"
    if not page_file.is_file():
        print(f"{page_file}: no such file (give a report folder)", file=sys.stderr)
        return 1
    if not args.browser:
        print("no chromium-headless-shell: run scripts/setup_browser.sh", file=sys.stderr)
        return 1
    from PIL import Image
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=args.browser)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(page_file.resolve().as_uri())
        page.wait_for_selector("#clusters li.cluster")
        for n in range(args.open):
            page.locator("#clusters li.cluster summary").nth(n).click()
        raw = Path(tmp) / "page.png"
        page.screenshot(path=str(raw))
        browser.close()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        Image.open(raw).convert("RGB").quantize(256).save(args.out, optimize=True)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
