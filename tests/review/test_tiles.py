"""Deep Zoom tiles of the item viewer: geometry, pixels, one build per image, and the tile routes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from flow_helpers import LARGE, large_image, write_viewer_bench
from PIL import Image
from review_helpers import PASSWORD

from scopebench.review.tiles import OVERLAP, TILE_SIZE, Pyramid, TileCache, needs_tiles


def test_pyramid_geometry_follows_the_dzi_convention() -> None:
    """Catches an off-by-one in the levels or the overlap: OpenSeadragon computes the same numbers
    from the descriptor and asks for tiles that would not exist (or misplaces them)."""
    pyr = Pyramid(3000, 2000, "png")
    assert pyr.max_level == 12  # ceil(log2(3000))
    assert pyr.level_size(12) == (3000, 2000) and pyr.level_size(11) == (1500, 1000)
    assert pyr.level_size(1) == (2, 1) and pyr.level_size(0) == (1, 1)
    assert pyr.grid(12) == (12, 8) and pyr.grid(0) == (1, 1)
    assert pyr.box(12, 0, 0) == (0, 0, TILE_SIZE + OVERLAP, TILE_SIZE + OVERLAP)
    assert pyr.box(12, 1, 1) == (253, 253, 2 * 254 + 1, 2 * 254 + 1)
    assert pyr.box(12, 11, 7) == (11 * 254 - 1, 7 * 254 - 1, 3000, 2000)  # clipped at the edge
    assert 'Format="png" Overlap="1" TileSize="254"' in pyr.dzi()
    assert '<Size Width="3000" Height="2000"/>' in pyr.dzi()


def test_tiling_is_for_large_or_browser_unreadable_images() -> None:
    """Catches tiling every image (a tile round trip for an 8-pixel icon) or none (a 40 Mpx PNG
    downloaded whole; a TIFF Chromium cannot show at all)."""
    assert not needs_tiles("image/png", 2048, 2048)
    assert needs_tiles("image/png", 2049, 10) and needs_tiles("image/jpeg", 10, 5000)
    assert needs_tiles("image/tiff", 8, 8)


def _reassemble(cache: TileCache, sha: str, pyr: Pyramid, level: int) -> np.ndarray:
    w, h = pyr.level_size(level)
    out = np.zeros((h, w, 3), np.uint8)
    cols, rows = pyr.grid(level)
    for col in range(cols):
        for row in range(rows):
            x0, y0, x1, y1 = pyr.box(level, col, row)
            with Image.open(cache.folder(sha) / str(level) / f"{col}_{row}.png") as tile:
                assert tile.size == (x1 - x0, y1 - y0)
                out[y0:y1, x0:x1] = np.asarray(tile.convert("RGB"))
    return out


def test_full_resolution_tiles_hold_the_original_pixels_and_are_built_once(tmp_path: Path) -> None:
    """Catches misplaced or resampled full-resolution tiles (a pathologist would read altered
    pixels), a missing level, and a pyramid rebuilt per request or per concurrent request."""
    img = large_image()
    src = tmp_path / "large.png"
    img.save(src)
    cache, sha = TileCache(tmp_path / "tiles"), "ab" * 32
    pyr = cache.pyramid(src, sha, "image/png")
    assert (pyr.width, pyr.height) == LARGE
    threads = [
        threading.Thread(target=cache.tile, args=(src, sha, pyr, pyr.max_level, 0, 0)) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.built == 1  # four requests at once, one build
    assert np.array_equal(_reassemble(cache, sha, pyr, pyr.max_level), np.asarray(img))
    assert sorted(int(p.name) for p in cache.folder(sha).iterdir()) == list(range(pyr.max_level + 1))
    with Image.open(cache.tile(src, sha, pyr, 0, 0, 0)) as top:
        assert top.size == (1, 1)
    assert cache.built == 1  # a later request reads the cache
    assert not [p for p in cache.folder(sha).parent.iterdir() if p.name.startswith(".")]  # no temp left
    with pytest.raises(Exception, match="levels run from 0 to 12"):
        cache.tile(src, sha, pyr, 13, 0, 0)
    with pytest.raises(Exception, match="the level is 9×6 tiles"):
        cache.tile(src, sha, pyr, 12, 9, 0)


def test_a_16_bit_image_is_stretched_not_clipped(tmp_path: Path) -> None:
    """Catches a plain 16→8-bit cast: 12-bit fluorescence data would show as white (clipped)."""
    arr = np.array([[100, 1100], [2100, 4095]], np.uint16)
    src = tmp_path / "f.tif"
    Image.fromarray(arr).save(src)
    cache, sha = TileCache(tmp_path / "tiles"), "cd" * 32
    pyr = cache.pyramid(src, sha, "image/tiff")
    with Image.open(cache.tile(src, sha, pyr, pyr.max_level, 0, 0)) as tile:
        assert tile.mode == "L"
        assert np.asarray(tile).tolist() == [[0, 64], [128, 255]]


def test_a_rotated_phone_photo_is_tiled_upright(tmp_path: Path) -> None:
    """Catches tiles cut from the stored pixels while browsers show the EXIF-rotated photo: a
    microscope photo taken with a phone would turn sideways once it is large enough to be tiled."""
    arr = np.zeros((20, 40, 3), np.uint8)
    arr[:, :20] = (255, 0, 0)  # stored: red left, blue right
    arr[:, 20:] = (0, 0, 255)
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to display": red ends on top
    src = tmp_path / "phone.jpg"
    Image.fromarray(arr).save(src, quality=95, exif=exif)
    cache, sha = TileCache(tmp_path / "tiles"), "ef" * 32
    pyr = cache.pyramid(src, sha, "image/jpeg")
    assert (pyr.width, pyr.height, pyr.fmt) == (20, 40, "jpeg")
    with Image.open(cache.tile(src, sha, pyr, pyr.max_level, 0, 0)) as tile:
        assert tile.size == (20, 40)
        top, bottom = tile.getpixel((10, 5)), tile.getpixel((10, 35))
    assert top[0] > 200 > top[2] and bottom[2] > 200 > bottom[0]


@pytest.fixture(scope="module")
def viewer_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from review_helpers import Server, build_project

    from scopebench.review.app import AppSettings, create_app

    root = tmp_path_factory.mktemp("tiles")
    db = str(root / "r.db")
    info = build_project(db, root / "store", write_viewer_bench(root / "bench"))
    with Server(create_app(AppSettings(db=db, store=root / "store"))) as server:
        yield info | {"url": server.url, "root": root}


def _client(url: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    assert client.post("/api/login", json={"username": name, "password": PASSWORD}).status_code == 200
    return client


def test_tile_routes_serve_members_only_and_refuse_what_is_not_a_tile(viewer_site: dict[str, Any]) -> None:
    """Catches a tile route that skips the membership check (an outsider reading a project's
    images tile by tile), serves out-of-range tiles or other formats, or builds outside the store."""
    from sqlalchemy import select

    from scopebench.review.db import ImageRow

    pid = viewer_site["project_id"]
    with viewer_site["sessions"]() as db:
        sha = db.scalar(select(ImageRow.sha256).where(ImageRow.width == LARGE[0]))
    base = f"/projects/{pid}/tiles/{sha}"
    with (
        closing(_client(viewer_site["url"], "ann")) as ann,
        closing(_client(viewer_site["url"], "eve")) as eve,
    ):
        dzi = ann.get(base + ".dzi")
        assert dzi.status_code == 200 and dzi.headers["content-type"].startswith("application/xml")
        assert f'<Size Width="{LARGE[0]}" Height="{LARGE[1]}"/>' in dzi.text
        tile = ann.get(base + "_files/12/8_5.png")  # the bottom-right full-resolution tile
        assert tile.status_code == 200 and tile.headers["content-type"] == "image/png"
        assert tile.content.startswith(b"\x89PNG")
        assert ann.get(base + "_files/12/9_0.png").status_code == 404
        assert ann.get(base + "_files/13/0_0.png").status_code == 404
        assert ann.get(base + "_files/12/0_0.jpeg").status_code == 404
        assert ann.get(f"/projects/{pid}/tiles/{'0' * 64}.dzi").status_code == 404
        assert eve.get(base + ".dzi").status_code == 404  # not a member: the same as missing
        assert eve.get(base + "_files/12/0_0.png").status_code == 404
    assert (viewer_site["root"] / "store" / "tiles" / sha[:2] / sha / "12" / "8_5.png").is_file()


def test_opening_an_item_cuts_the_next_items_tiles_in_the_background(viewer_site: dict[str, Any]) -> None:
    """Catches a prefetch that never starts: the reviewer's next large item would then open on an
    empty viewer for the seconds its pyramid takes to cut."""
    import shutil
    import time

    from sqlalchemy import select

    from scopebench.review.db import Assignment, ImageRow, ItemRow, User

    pid = viewer_site["project_id"]
    with viewer_site["sessions"]() as db:
        sha = db.scalar(select(ImageRow.sha256).where(ImageRow.width == LARGE[0]))
        name = db.scalar(
            select(User.username)
            .join(Assignment, Assignment.user_id == User.id)
            .join(ItemRow, ItemRow.id == Assignment.item_id)
            .where(ItemRow.key == "local/q5")
        )
    folder = viewer_site["root"] / "store" / "tiles" / sha[:2] / sha
    shutil.rmtree(folder, ignore_errors=True)  # whatever an earlier test built
    with closing(_client(viewer_site["url"], name)) as client:
        queue = client.get(f"/api/projects/{pid}/queue").json()
        i = next(k for k, q in enumerate(queue) if q["key"] == "local/q5")
        before = queue[i - 1]  # the item before q5 (cyclically): q5 is the next to do after it
        assert before["key"] != "local/q5" and queue[i]["status"] == "assigned"
        assert client.get(f"/assignments/{before['assignment_id']}").status_code == 200
    deadline = time.monotonic() + 120  # a generous bound on a loaded machine; the wait ends on the folder
    while not folder.is_dir():
        assert time.monotonic() < deadline, "the next item's tiles were never built"
        time.sleep(0.05)
    assert (folder / "12" / "8_5.png").is_file()  # a whole pyramid, renamed into place at once
