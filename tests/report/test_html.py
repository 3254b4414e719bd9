"""The HTML report without a browser: self-contained, escaped, every item and outcome present."""

from __future__ import annotations

import base64
import io
import json
from html.parser import HTMLParser
from pathlib import Path

from html_fixtures import A_OUTCOMES, B_OUTCOMES, EVIL_OPTION, EVIL_QUESTION, EVIL_RESPONSE
from PIL import Image

from scopebench.benchmarks import Benchmark, LoadedBenchmark, register_benchmark
from scopebench.cli import main
from scopebench.config import ReportConfig
from scopebench.engine import RunConfig, run_benchmark
from scopebench.items import ImageRef, Item, Record
from scopebench.report import html
from scopebench.report.html import HtmlReport, build_html_report, item_groups, outcome, write_html_report


class PageParser(HTMLParser):
    """Collects what the tests look at: URL attributes, scripts, items, question texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str, str]] = []
        self.scripts: list[dict[str, str | None]] = []
        self.articles: list[dict[str, str | None]] = []
        self.thumb_refs: list[str] = []
        self.questions: list[str] = []
        self.options: list[str] = []
        self.responses: list[str] = []
        self.counter = ""
        self._capture: str | None = None
        self._buf = ""
        self.script_text: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href", "action", "data", "poster"):
            if a.get(k) is not None:
                self.urls.append((tag, k, a[k] or ""))
        if tag == "script":
            self.scripts.append(a)
            self._capture, self._buf = f"script:{a.get('id')}", ""
        elif tag == "article":
            self.articles.append(a)
        elif tag == "img" and a.get("data-thumb"):
            self.thumb_refs.append(a["data-thumb"] or "")
        elif tag == "p" and a.get("class") == "question":
            self._capture, self._buf = "question", ""
        elif tag == "li" and self._capture is None:
            self._capture, self._buf = "option", ""
        elif tag == "pre" and a.get("class") == "response":
            self._capture, self._buf = "response", ""
        elif tag == "span" and a.get("id") == "sb-counter":
            self._capture, self._buf = "counter", ""

    def handle_data(self, data):
        if self._capture:
            self._buf += data

    def handle_endtag(self, tag):
        cap = self._capture
        if cap is None:
            return
        if cap.startswith("script:") and tag == "script":
            self.script_text[cap[7:]] = self._buf
        elif (cap, tag) == ("question", "p"):
            self.questions.append(self._buf)
        elif (cap, tag) == ("option", "li"):
            self.options.append(self._buf)
        elif (cap, tag) == ("response", "pre"):
            self.responses.append(self._buf)
        elif (cap, tag) == ("counter", "span"):
            self.counter = self._buf
        else:
            return
        self._capture = None


def parse(text: str) -> PageParser:
    p = PageParser()
    p.feed(text)
    p.close()
    return p


def test_outcome_and_groups():
    rec = Record("x", "m", "ok", choice=1, correct=True)
    assert outcome(rec) == "correct"
    assert outcome(Record("x", "m", "ok", choice=0, correct=False)) == "wrong"
    assert outcome(Record("x", "m", "unparsed")) == "unparsed"
    assert outcome(Record("x", "m", "error")) == "error"
    assert outcome(Record("x", "m", "missing_image")) == "missing"
    assert outcome(Record("x", "m", "missing_response")) == "missing"
    assert outcome(Record("x", "m", "ok", kind="detection")) == "detection"
    assert outcome(None) == "absent"
    s = {
        "subset": "single",
        "split": "test",
        "metadata": {"stain": "H&E", "modality": "", "domain": "pathology"},
    }
    assert item_groups(s) == ["subset=single", "split=test", "domain=pathology", "stain=H&E"]


def item_pages(report: HtmlReport) -> list[dict]:
    """The item files' payloads, in page order (each file is ``sbPage(n, {...});``)."""
    out = []
    for n, name in enumerate(sorted(report.files), start=1):
        text = report.files[name]
        assert name == f"items-{n:05d}.js"
        prefix = f"sbPage({n}, "
        assert text.startswith(prefix) and text.endswith(");\n")
        out.append(json.loads(text[len(prefix) : -3]))
    return out


def test_page_is_self_contained_and_escaped(html_runs):
    report = build_html_report(html_runs, ReportConfig(resamples=50))
    text = report.page
    page = parse(text)
    # Nothing but data: URIs in the page; every script inline; a CSP that forbids other sources
    # than the item files beside the page.
    assert page.urls, "the page should have plots and an icon"
    for tag, attr, url in page.urls:
        assert url.startswith("data:"), (tag, attr, url[:60])
    assert "http://" not in text and "https://" not in text
    assert all(s.get("src") is None for s in page.scripts)
    assert [s.get("id") for s in page.scripts] == ["sb-index", "sb-placeholder", "sb-metrics", None]
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    # User text is data for the JavaScript, which sets it as DOM text (never innerHTML).
    items = item_pages(report)[0]["items"]
    assert items[0]["question"] == EVIL_QUESTION and items[0]["choices"][0] == EVIL_OPTION
    assert items[9]["runs"][0]["response"] == EVIL_RESPONSE
    js = (Path(html.__file__).parent / "templates" / "report.js").read_text()
    assert "innerHTML" not in js
    assert "<script>window.__pwned" not in text
    assert "</" not in "".join(report.files.values())  # JSON in the item files escapes < too
    # Embedded JSON cannot close its <script> element.
    for key in ("sb-index", "sb-metrics"):
        assert "</" not in page.script_text[key]
    metrics = json.loads(page.script_text["sb-metrics"])
    assert [m["model"] for m in metrics] == ["model-a", "model-b"]
    assert metrics[0]["overall"]["correct"] == 6 and metrics[1]["overall"]["correct"] == 5


def test_items_outcomes_and_thumbnails(html_runs):
    report = build_html_report(html_runs, ReportConfig(resamples=50), page_size=5)
    page = parse(report.page)
    assert page.counter == "12 of 12 items match"
    assert "1 image(s) could not be found or read" in report.page
    assert not page.articles  # items are drawn by the script, a page at a time
    index = json.loads(page.script_text["sb-index"])
    assert index["page_size"] == 5 and index["items_dir"] == "report_items"
    assert index["labels"] == ["model-a", "model-b"] and index["tasks"] == ["HI", "NP"]
    rows = {r[0]: r for r in index["rows"]}
    assert list(rows) == [f"spur/q{i:02d}" for i in range(12)]
    for i in range(12):
        expect = [A_OUTCOMES[i], B_OUTCOMES[i]]
        expect = ["missing" if o.startswith("missing") else o for o in expect]
        assert [index["outcomes"][int(c)] for c in rows[f"spur/q{i:02d}"][3]] == expect
        assert index["tasks"][rows[f"spur/q{i:02d}"][1]] == ("NP" if i % 2 == 0 else "HI")
    assert [index["groups"][g] for g in rows["spur/q00"][2]] == [
        "subset=single",
        "split=test",
        "modality=light",
    ]
    # 12 items, 5 a page: three item files of 5, 5 and 2 items, in id order.
    pages = item_pages(report)
    assert [[it["id"] for it in p["items"]] for p in pages] == [
        [f"spur/q{i:02d}" for i in range(5 * k, min(5 * k + 5, 12))] for k in range(3)
    ]
    items = [it for p in pages for it in p["items"]]
    # Items 0–9 show a real thumbnail (8 and 9 share one file), item 10's file is gone, 11 has none.
    refs = [key for it in items for key, _ in it["images"]]
    assert len(refs) == 11 and refs[10] == "missing" and items[11]["images"] == []
    assert len(set(refs[:10])) == 9 and refs[8] == refs[9]
    # Each file carries exactly the thumbnails its items show.
    for p in pages:
        assert set(p["thumbs"]) == {k for it in p["items"] for k, _ in it["images"]} - {"missing"}
    data = pages[0]["thumbs"][refs[0]]
    assert data.startswith("data:image/jpeg;base64,")
    with Image.open(io.BytesIO(base64.b64decode(data.split(",", 1)[1]))) as im:
        assert im.size == (160, 107)  # 300×200 bounded to 160 px
    assert items[10]["runs"][0] == {
        "outcome": "error",
        "answer": "—",
        "response": "",
        "notes": ["model call failed: <timeout> & retry"],
        "prompt": "",  # records written without a sample show none
        "system": "",
        "sent_images": [],
    }
    assert items[0]["truth"] == f"A. {EVIL_OPTION}"


def test_write_replaces_the_item_folder(html_runs, tmp_path):
    out = tmp_path / "rep.html"
    stale = tmp_path / "rep_items" / "items-00099.js"
    stale.parent.mkdir()
    stale.write_text("old")
    write_html_report(html_runs, out, ReportConfig(resamples=20), page_size=5)
    assert sorted(p.name for p in (tmp_path / "rep_items").iterdir()) == [
        "items-00001.js",
        "items-00002.js",
        "items-00003.js",
    ]
    assert '"items_dir": "rep_items"' in out.read_text()


def test_cli_writes_html_and_refuses_mixed_benchmarks(html_runs, tmp_path, capsys):
    out = tmp_path / "sub" / "report.html"
    code = main(["report", *map(str, html_runs), "--html", str(out), "--resamples", "50", "--published"])
    assert code == 0
    text = out.read_text(encoding="utf-8")
    assert "Leaderboard" in text and "McNemar" in text and "published, not reproduced here" in text
    other = tmp_path / "other"
    other.mkdir()
    cfg = json.loads((html_runs[0] / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**cfg, "benchmark": "microvqa"}))
    (other / "records.sqlite").write_bytes((html_runs[0] / "records.sqlite").read_bytes())
    assert main(["report", str(html_runs[0]), str(other), "--html", str(tmp_path / "x.html")]) == 2
    assert "different benchmarks" in capsys.readouterr().err


def _png(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 32), color).save(buf, format="PNG")
    return buf.getvalue()


@register_benchmark("htmlbytes")
class BytesBenchmark(Benchmark):
    """Images that exist only inside the data (bytes), as in a Hugging Face dataset."""

    title = "images as bytes"
    splits = ("test",)
    tasks = ("t",)
    default_split = "test"
    data_help = "tests only"

    def load(self, data: str | Path, split: str | None = None) -> LoadedBenchmark:
        items = [
            Item(
                id=f"hb/{i}",
                benchmark="htmlbytes",
                split="test",
                task="t",
                question=f"q{i}",
                choices=("a", "b"),
                answer_index=i % 2,
                images=(ImageRef(key=f"hb-img-{i % 2}", data=_png((200 * (i % 2), 50, 50))),),
            )
            for i in range(4)
        ]
        return LoadedBenchmark(name="htmlbytes", data=str(data), items=items, fingerprint="hb")


def test_thumbnails_from_a_reloaded_dataset(tmp_path):
    run = run_benchmark(
        RunConfig(benchmark="htmlbytes", data="x", model="random", seed=0), tmp_path / "r"
    ).run_dir
    (data,) = item_pages(build_html_report([run], ReportConfig(resamples=20)))
    refs = [key for it in data["items"] for key, _ in it["images"]]
    assert refs and "missing" not in refs
    assert len(set(refs)) == 2  # two distinct images, each made once
    thumbs = data["thumbs"]
    with Image.open(io.BytesIO(base64.b64decode(thumbs[refs[1]].split(",", 1)[1]))) as im:
        assert im.size == (64, 32)  # smaller than the bound: kept as is


def test_single_run_page_with_published_rows(html_runs):
    text = build_html_report([html_runs[0]], ReportConfig(resamples=20, published=True)).page
    page = parse(text)
    assert "Published numbers (published, not reproduced here)" in text
    assert "Leaderboard" not in text  # one run: no leaderboard, no pairwise tests
    assert page.counter == "12 of 12 items match"
    # Baseline rows sit in the run's metrics table, marked as such.
    assert 'class="baseline" data-section="baseline:frequent" data-group="overall"' in text


def test_item_ids_sort_naturally() -> None:
    from scopebench.report.html import _natural_key

    ids = ["pm/test_tiny/10", "pm/test_tiny/2", "pm/test_tiny/1", "pm/val/3", "pm/test_tiny/1a"]
    assert sorted(ids, key=_natural_key) == [
        "pm/test_tiny/1",
        "pm/test_tiny/1a",
        "pm/test_tiny/2",
        "pm/test_tiny/10",
        "pm/val/3",
    ]
