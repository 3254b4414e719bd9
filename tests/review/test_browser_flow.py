"""The reviewing flow in a real headless Chromium (Playwright): a whole review by keyboard alone, the
key shown only once the answer is stored, the deep-zoom viewer (zoom to full resolution from DZI
tiles, several images side by side) and the page on a touch tablet.

Every wait is on a selector, a URL or a condition in the page, never a fixed sleep.
Skipped with the reason when Chromium or Playwright is missing (see test_browser.py).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flow_helpers import LARGE, write_viewer_bench
from review_helpers import PASSWORD
from sqlalchemy import select

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.is_file(), reason="needs Debian's chromium (bash .ci/install-chromium.sh)"
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="needs Playwright (the browser extra)"
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from review_helpers import Server, build_project

    from scopebench.review.app import AppSettings, create_app

    root = tmp_path_factory.mktemp("flow")
    db = str(root / "r.db")
    info = build_project(db, root / "store", write_viewer_bench(root / "bench"))
    with Server(create_app(AppSettings(db=db, store=root / "store"))) as server:
        yield info | {"url": server.url, "root": root}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def _page(browser: Any, **context: Any) -> Any:
    page = browser.new_context(viewport={"width": 1280, "height": 900}, **context).new_page()
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    return page


def _login(page: Any, url: str, name: str) -> None:
    page.goto(url + "/login")
    page.fill("#username", name)
    page.fill("#password", PASSWORD)
    page.press("#password", "Enter")
    page.wait_for_url(url + "/")


def _holder(site: dict[str, Any], key: str, but: str = "ann") -> tuple[str, int]:
    """A user assigned item ``key`` (not ``but``, whose queue the keyboard test works through) and
    their assignment's id."""
    from scopebench.review.db import Assignment, ItemRow, User

    with site["sessions"]() as db:
        name, aid = db.execute(
            select(User.username, Assignment.id)
            .join(Assignment, Assignment.user_id == User.id)
            .join(ItemRow, ItemRow.id == Assignment.item_id)
            .where(ItemRow.key == key, User.username != but)
            .order_by(Assignment.id)
        ).first()
    return str(name), int(aid)


def _stored(site: dict[str, Any], assignment_id: int) -> tuple[int, int] | None:
    from scopebench.review.db import Answer

    with site["sessions"]() as db:
        ans = db.scalar(select(Answer).where(Answer.assignment_id == assignment_id))
        return None if ans is None else (ans.choice, ans.confidence)


def _answer_by_keys(page: Any, site: dict[str, Any], k: int) -> tuple[int, int, int]:
    """Answer the open item with keys only; the key must show only once the answer is stored."""
    aid = int(re.search(r"/assignments/(\d+)", page.url).group(1))  # type: ignore[union-attr]
    n_options = page.locator("input[name=choice]").count()
    choice, confidence = k % n_options, 1 + k % 5
    # The key is nowhere in the page, and nothing is stored, before the answer is submitted.
    assert page.locator(".key").count() == 0 and "(key)" not in page.content()
    # Options by letter on even items, by digit (the highlighted row) on odd ones.
    page.keyboard.press("abcdefghij"[choice] if k % 2 == 0 else str(choice + 1))
    page.keyboard.press(str(confidence))  # the highlight moved on to the confidence row
    assert _stored(site, aid) is None
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")  # a double press posts once (else: "answered already", a 409 page)
    page.wait_for_selector("li.key")
    assert _stored(site, aid) == (choice, confidence)  # stored before the key was on screen
    return aid, choice, confidence


@pytest.mark.slow
def test_a_whole_review_by_keyboard_only(site: dict[str, Any], browser: Any) -> None:
    """Catches a flow that needs the mouse (option, confidence, rubric, submit, next), a key shown
    before the answer is stored, a submit that returns to the list instead of opening the next item,
    and a progress bar that does not count."""
    from scopebench.review.db import Assignment, Rating

    url, pid = site["url"], site["project_id"]
    page = _page(browser)
    page.goto(url + "/login")
    page.keyboard.type("ann")  # the username field has the focus
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(url + "/")
    with site["sessions"]() as db:
        owed = db.scalar(
            select(Assignment.id).where(Assignment.user_id == site["users"]["ann"]).order_by(Assignment.id)
        )
        total = len(db.scalars(select(Assignment.id).where(Assignment.user_id == site["users"]["ann"])).all())
    assert owed is not None and total >= 3
    page.goto(f"{url}/projects/{pid}")
    assert page.inner_text("#my-progress-text") == f"0 / {total} done"
    page.keyboard.press("?")
    page.wait_for_selector("#help[open]")
    page.keyboard.press("Escape")
    page.wait_for_selector("#help:not([open])", state="attached")
    page.keyboard.press("n")  # the first item to do
    page.wait_for_url(re.compile(r"/assignments/\d+$"))
    done: dict[int, tuple[int, int]] = {}
    for k in range(total):
        aid, choice, confidence = _answer_by_keys(page, site, k)
        done[aid] = (choice, confidence)
        if k == 1:  # back to the previous (rated) item and forward again, by keys
            page.keyboard.press("p")
            page.wait_for_selector("#rated")
            page.keyboard.press("n")
            page.wait_for_selector("#rating-form")
        page.keyboard.press("Enter")  # nothing chosen yet: the form says what is missing
        page.wait_for_selector(".form-hint:text('Still to choose')")
        sizes = page.eval_on_selector_all(
            "#rating-form fieldset.key-row", "rows => rows.map(r => r.querySelectorAll('input').length)"
        )
        for size in sizes:  # scales 1–5: 4 (keep) or 1 (flagged); verdicts: 1 (valid)
            page.keyboard.press("4" if size == 5 and k % 2 == 0 else "1")
        page.keyboard.press("Enter")
        if k + 1 < total:
            page.wait_for_url(re.compile(r"/assignments/\d+\?saved=1$"))
            assert page.inner_text("#my-progress-text") == f"{k + 1} / {total} done"
    page.wait_for_url(f"{url}/projects/{pid}")
    page.wait_for_selector("#all-done")
    assert page.inner_text("#my-progress-text") == f"{total} / {total} done"
    assert page.errors == []
    with site["sessions"]() as db:
        mine = db.scalars(select(Assignment).where(Assignment.user_id == site["users"]["ann"])).all()
        assert {a.id for a in mine} == set(done) and all(a.status == "rated" for a in mine)
        assert len(db.scalars(select(Rating).where(Rating.assignment_id.in_(list(done)))).all()) == total
    assert all(_stored(site, aid) == got for aid, got in done.items())


def _viewer_ready(page: Any, index: int = 1) -> None:
    page.wait_for_function(
        f"() => {{ const v = document.querySelector('#viewer-{index}').viewer;"
        " return v && v.world.getItemCount() === 1 && v.world.getItemAt(0).getFullyLoaded(); }"
    )


def test_zoom_a_large_image_to_full_resolution_from_tiles(site: dict[str, Any], browser: Any) -> None:
    """Catches a viewer that does not zoom (or not by key), stops short of full resolution, loads the
    large image whole instead of as tiles, or builds its pyramid more than once."""
    from scopebench.review.tiles import tile_cache

    name, aid = _holder(site, "local/q5")
    page = _page(browser)
    _login(page, site["url"], name)
    page.goto(f"{site['url']}/assignments/{aid}")
    assert page.get_attribute("#viewer-1", "data-kind") == "dzi"
    _viewer_ready(page)
    image_zoom = (
        "() => { const vp = document.querySelector('#viewer-1').viewer.viewport;"
        " return vp.viewportToImageZoom(vp.getZoom(true)); }"
    )
    home = page.evaluate(image_zoom)
    assert 0 < home < 1  # the whole 2100 px image fits the screen at first
    for _ in range(4):  # 1.5^4 = 5× the fitted view: past 1:1
        page.keyboard.press("+")
    page.wait_for_function(f"() => ({image_zoom})() >= 1")
    _viewer_ready(page)
    full_level = 12  # ceil(log2(2100)): the full-resolution DZI level
    names = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    assert any(f"_files/{full_level}/" in n for n in names)
    assert not any(n.endswith(f"/images/{_sha(site, LARGE)}") for n in names)  # never the whole file
    page.keyboard.press("0")  # back to the whole image
    page.wait_for_function(f"() => Math.abs(({image_zoom})() - {home}) < 1e-6")
    assert tile_cache(site["root"] / "store").built == 1
    assert page.errors == []


def _sha(site: dict[str, Any], size: tuple[int, int]) -> str:
    from scopebench.review.db import ImageRow

    with site["sessions"]() as db:
        return str(db.scalar(select(ImageRow.sha256).where(ImageRow.width == size[0])))


def test_two_images_side_by_side(site: dict[str, Any], browser: Any) -> None:
    """Catches a multi-image item whose images stack (or only the first showing)."""
    name, aid = _holder(site, "local/q6")
    page = _page(browser)
    _login(page, site["url"], name)
    page.goto(f"{site['url']}/assignments/{aid}")
    _viewer_ready(page, 1)
    _viewer_ready(page, 2)
    left, right = page.locator("#viewer-1").bounding_box(), page.locator("#viewer-2").bounding_box()
    assert left["y"] == right["y"] and right["x"] >= left["x"] + left["width"]
    assert page.errors == []


def test_the_page_works_on_a_touch_tablet(site: dict[str, Any], browser: Any) -> None:
    """Catches a layout wider than a tablet, targets too small for a finger, and a viewer or form
    that needs a mouse or keyboard."""
    name, aid = _holder(site, "local/q5")  # the large image: room to zoom in
    page = _page(browser, has_touch=True, is_mobile=True, device_scale_factor=2)
    page.set_viewport_size({"width": 820, "height": 1180})  # iPad Air, portrait
    _login(page, site["url"], name)
    page.goto(f"{site['url']}/assignments/{aid}")
    page.wait_for_selector("#answer-form")
    _viewer_ready(page)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    for target in ("label.choice", "label.inline-choice", ".zoom-in", "#submit-answer"):
        assert page.locator(target).first.bounding_box()["height"] >= 44, target
    zoom = "() => document.querySelector('#viewer-1').viewer.viewport.getZoom(true)"
    before = page.evaluate(zoom)
    page.tap(".zoom-in")
    page.wait_for_function(f"() => ({zoom})() > {before} * 1.4")
    page.tap("label.choice >> nth=1")
    page.tap("label.inline-choice >> nth=2")
    page.tap("#submit-answer")
    page.wait_for_selector("#rating-form")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.errors == []
