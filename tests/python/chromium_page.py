"""A report page as headless Chromium renders it, for the report tests: the DOM it
made, after checking that nothing went wrong (no console error, no failed load, every
figure drawn by plotly.js). Skips the test where the ``chromium`` binary is absent
(Debian package ``chromium``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

# Injected at the top of <head> of a copy of the report: records what a person
# would see in the DevTools console (errors, uncaught exceptions, rejected
# promises) and every resource that failed to load, and writes the list into the
# DOM once the page has loaded, where --dump-dom shows it. Chromium's own
# --enable-logging prints console messages without their level, so it cannot tell
# an error from a log line by itself.
PROBE = """<script>
window.__probe = [];
(function () {
  function rec(kind, msg) { window.__probe.push(kind + ": " + msg); }
  var error = console.error;
  console.error = function () {
    rec("console.error", Array.prototype.join.call(arguments, " "));
    return error.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window) { rec("failed to load", t.src || t.href || t.tagName); }
    else { rec("uncaught", e.message); }
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    rec("unhandled rejection", String(e.reason));
  });
  window.addEventListener("load", function () {
    setTimeout(function () {
      var out = document.createElement("pre");
      out.id = "probe-errors";
      out.textContent = JSON.stringify(window.__probe);
      document.body.appendChild(out);
    }, 0);
  });
})();
</script>"""


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta"}
VOID |= {"source", "track", "wbr"}


class Page(HTMLParser):
    """Collects what the tests look at: every tag's attributes, the text of each
    element with an id and of the anomaly list items, the inline scripts' sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[int] = []
        self.text_by_id: dict[str, str] = {}
        self.anomalies: list[tuple[dict[str, str], str]] = []
        self.items: dict[str, list[tuple[dict[str, str], str]]] = {}  # li by class
        self._stack: list[tuple[str, dict[str, str], list[str]]] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag not in VOID:
            self._stack.append((tag, a, []))

    def handle_endtag(self, tag):
        if not any(t == tag for t, _, _ in self._stack):
            return  # a stray end tag
        while self._stack:
            name, a, parts = self._stack.pop()
            text = "".join(parts)
            if name == "script":
                self.scripts.append(len(text))
                text = ""
            if "id" in a:
                self.text_by_id[a["id"]] = text
            if "anomaly" in a.get("class", "").split():
                self.anomalies.append((a, text))
            if name == "li":
                for cls in a.get("class", "").split():
                    self.items.setdefault(cls, []).append((a, text))
            if self._stack:
                self._stack[-1][2].append(text)
            if name == tag:
                return

    def handle_data(self, data):
        if self._stack:
            self._stack[-1][2].append(data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


def render_in_chromium(text: str, tmp_path) -> Page:
    """The DOM headless Chromium made of the page ``text`` (with the console probe),
    after checking that nothing went wrong on the way: no console error, no failed
    load, every figure drawn by plotly.js."""
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("headless Chromium not installed (Debian package: chromium)")
    probed = tmp_path / "probed.html"
    probed.write_text(text.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",  # tests may run as root, which the sandbox refuses
            "--disable-gpu",
            "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={tmp_path / 'profile'}",
            # Any host name fails to resolve: the page must need no network.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            # Virtual time: the page's timers run to completion however slow the
            # machine, so the DOM is dumped after every plot was drawn.
            "--virtual-time-budget=10000",
            "--dump-dom",
            probed.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [x for x in proc.stderr.splitlines() if ":CONSOLE" in x]
    assert not [x for x in console if "Uncaught" in x or "Error" in x], console
    dom = parse(proc.stdout)
    assert "probe-errors" in dom.text_by_id, "the page's scripts did not run"
    assert json.loads(dom.text_by_id["probe-errors"]) == []

    # Every figure was drawn by plotly.js.
    figures = {
        a["id"]: a.get("class", "")
        for t, a in dom.tags
        if t == "div" and a.get("id", "").startswith("fig-")
    }
    assert figures and all("js-plotly-plot" in c for c in figures.values()), figures
    assert sum(1 for t, a in dom.tags if "main-svg" in a.get("class", "")) >= len(
        figures
    )
    return dom
