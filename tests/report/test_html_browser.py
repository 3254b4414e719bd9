"""The HTML report in a real headless Chromium (Debian's ``chromium``, driven by Playwright).

The page is opened from ``file://`` exactly as a user would open it: it must load with no console
error and no failed request, and every filter must show the number of items the metrics JSON
predicts. Skipped, with the reason, when Chromium or Playwright is not installed
(``make test`` installs both on Debian: ``.ci/install-chromium.sh`` and the ``browser`` extra).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from html_fixtures import EVIL_RESPONSE

from scopebench.config import ReportConfig
from scopebench.report import write_run_outputs
from scopebench.report.html import write_html_report

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    # One worker: its module fixtures (two runs of a report, a browser page) are built once.
    pytest.mark.xdist_group("html_browser"),
    pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason="needs Debian's chromium at /usr/bin/chromium (run `bash .ci/install-chromium.sh` as root)",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None,
        reason="needs Playwright for Python (`pip install -e '.[browser]'`; no browser download needed)",
    ),
]

RESAMPLES = 50


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def report(html_runs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """The HTML file of both runs and each run's metrics.json (written by `report`)."""
    out = tmp_path_factory.mktemp("html") / "report.html"
    write_html_report(html_runs, out, ReportConfig(resamples=RESAMPLES))
    metrics = []
    for run in html_runs:
        write_run_outputs(run, ReportConfig(resamples=RESAMPLES), out_dir=run / "rep")
        metrics.append(json.loads((run / "rep" / "metrics.json").read_text(encoding="utf-8")))
    return out, metrics


@pytest.fixture
def page(browser: Any, report: tuple[Path, list[dict]]) -> Iterator[Any]:
    pg = browser.new_page()
    problems: list[str] = []
    pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("requestfailed", lambda r: problems.append(f"request failed: {r.url[:100]}"))
    pg.goto(report[0].as_uri())
    pg.wait_for_load_state("load")
    pg.wait_for_selector('#items[data-state="ready"]', state="attached")
    pg.problems = problems
    yield pg
    pg.close()


def shown(pg: Any, **filters: str) -> int:
    """Apply the filters (ids without ``f-``; others reset), check the counter, return visible rows."""
    for name in ("task", "group", "outcome"):
        pg.select_option(f"#f-{name}", filters.get(name, ""))
    pg.select_option("#f-model", filters.get("model", "0"))
    pg.wait_for_selector('#items[data-state="ready"]', state="attached")
    n = pg.locator("article.item").count()
    assert pg.inner_text("#sb-counter") == f"{n} of 12 items match"
    return n


def test_page_loads_clean_from_disk(page):
    assert page.url.startswith("file://")
    assert page.inner_text("#sb-counter") == "12 of 12 items match"
    assert page.evaluate("window.__pwned === undefined")  # the escaped <script>s never ran
    # Every thumbnail (11: 10 images + the missing-file placeholder) decoded to a real picture.
    widths = page.eval_on_selector_all("img[data-thumb]", "els => els.map(e => e.complete && e.naturalWidth)")
    assert len(widths) == 11 and all(w and w > 0 for w in widths), widths
    plots = page.eval_on_selector_all("img.plot", "els => els.map(e => e.naturalWidth)")
    # One accuracy panel of both models (not one per model) and the heatmap.
    assert len(plots) == 2 and all(w > 0 for w in plots)
    assert page.problems == []


def test_filters_match_metrics_json(page, report):
    _, metrics = report
    assert shown(page) == 12
    for model, m in enumerate(metrics):
        mk = str(model)
        assert shown(page, outcome="correct", model=mk) == m["overall"]["correct"]
        for row in m["by_task"]:
            task = row["group"].removeprefix("task=")
            assert shown(page, task=task) == row["n"]
            assert shown(page, task=task, outcome="correct", model=mk) == row["correct"]
            assert shown(page, task=task, outcome="unparsed", model=mk) == row["unparsed"]
            assert shown(page, task=task, outcome="error", model=mk) == row["errors"]
            missing = row["missing_image"] + row["missing_response"]
            assert shown(page, task=task, outcome="missing", model=mk) == missing
            wrong = row["n"] - row["correct"] - row["unparsed"] - row["errors"] - missing
            assert shown(page, task=task, outcome="wrong", model=mk) == wrong
        group_rows = m["by_subset"] + [r for rows in m["by_metadata"].values() for r in rows]
        groups = {r["group"] for r in group_rows}
        assert groups == {"subset=single", "subset=multi", "modality=light", "modality=fluorescence"}
        for row in group_rows:
            assert shown(page, group=row["group"]) == row["n"]
            assert shown(page, group=row["group"], outcome="correct", model=mk) == row["correct"]
    assert page.problems == []


def test_filters_change_rows_by_hand_count(page):
    # Hand-counted from html_fixtures: run a is right on 0,1,2,3,6,7; NP = even items.
    assert shown(page, task="NP") == 6
    assert shown(page, task="NP", outcome="correct") == 3  # items 0, 2, 6
    # Run b is wrong on 1, 2, 3, 6, 7, 10; subset multi = items 6–11 (11 is a missing response).
    assert shown(page, group="subset=multi", outcome="wrong", model="1") == 3
    assert shown(page, group="subset=multi", outcome="missing", model="1") == 1
    assert shown(page, outcome="unparsed") == 1 and shown(page, outcome="error") == 1
    assert shown(page, outcome="unparsed", model="1") == 0
    assert shown(page) == 12


def test_pages_load_their_item_files_on_demand(browser, html_runs, tmp_path):
    # 12 items, 5 a page: page 2 shows items 5–9, read from report_items/items-00002.js only
    # when the user turns to it; the last page has the 2 items left.
    out = write_html_report(html_runs, tmp_path / "report.html", ReportConfig(resamples=20), page_size=5)
    pg = browser.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(str(e)))
    requested: list[str] = []
    pg.on("request", lambda r: requested.append(r.url.rsplit("/", 1)[-1]))
    pg.goto(out.as_uri())
    pg.wait_for_selector('#items[data-state="ready"]', state="attached")
    ids = "els => els.map(e => e.getAttribute('data-id'))"
    assert pg.eval_on_selector_all("article.item", ids) == [f"spur/q{i:02d}" for i in range(5)]
    assert [u for u in requested if u.startswith("items-")] == ["items-00001.js"]
    assert pg.inner_text("#sb-page") == "page 1 of 3 (items 1–5)"
    pg.click("#sb-next")
    pg.wait_for_selector('#items[data-state="ready"][data-page="2"]', state="attached")
    assert pg.eval_on_selector_all("article.item", ids) == [f"spur/q{i:02d}" for i in range(5, 10)]
    assert pg.inner_text("#sb-page") == "page 2 of 3 (items 6–10)"
    assert pg.inner_text("article.item[data-id='spur/q09'] pre.response") == EVIL_RESPONSE
    assert [u for u in requested if u.startswith("items-")] == ["items-00001.js", "items-00002.js"]
    pg.click("#sb-next")
    pg.wait_for_selector('#items[data-state="ready"][data-page="3"]', state="attached")
    assert pg.locator("article.item").count() == 2 and pg.is_disabled("#sb-next")
    # A filter spanning pages: NP (even items) draws from all three files, 5 on page 1.
    pg.select_option("#f-task", "NP")
    pg.wait_for_selector('#items[data-state="ready"][data-page="1"]', state="attached")
    assert pg.eval_on_selector_all("article.item", ids) == [f"spur/q{i:02d}" for i in (0, 2, 4, 6, 8)]
    assert pg.inner_text("#sb-counter") == "6 of 12 items match"
    assert problems == [] and pg.evaluate("window.__pwned === undefined")
    pg.close()


def test_missing_item_folder_says_what_to_do(browser, html_runs, tmp_path):
    import shutil

    out = write_html_report(html_runs, tmp_path / "r.html", ReportConfig(resamples=20))
    shutil.rmtree(tmp_path / "r_items")
    pg = browser.new_page()
    pg.goto(out.as_uri())
    pg.wait_for_selector('#items[data-state="failed"]', state="attached")
    assert "keep the folder r_items/ beside this HTML file" in pg.inner_text("#sb-status")
    pg.close()
