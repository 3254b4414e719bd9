"""PathMMU corruptions and noise images: determinism, monotone severity, any size/mode, laziness."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy.ndimage import laplace
from skimage import data
from skimage.color import rgb2hsv

from scopebench.errors import ScopebenchError
from scopebench.items import ImageRef, Item
from scopebench.transforms import apply_transform, available_transforms
from scopebench.transforms.image import (
    CORRUPTIONS,
    NOISE_MEAN,
    NOISE_STD,
    corrupt,
    corrupt_items,
    noise_items,
    parse_corruption_arg,
)

NAMES = list(CORRUPTIONS)


@pytest.fixture(scope="module")
def photo() -> Image.Image:
    """A colourful, textured 224×224 photograph (scikit-image's bundled astronaut)."""
    return Image.fromarray(data.astronaut()).resize((224, 224), Image.Resampling.BILINEAR)


def _arr(img: Image.Image) -> np.ndarray:
    return np.asarray(img.convert("RGB"), dtype=float) / 255.0


def _hf_energy(img: Image.Image) -> float:
    return float(np.mean(laplace(np.asarray(img.convert("L"), dtype=float) / 255.0) ** 2))


def _png_bytes(img: Image.Image) -> int:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.tell()


def _equal_neighbours(img: Image.Image) -> float:
    a = np.asarray(img.convert("L"))
    return float(np.mean(a[:, 1:] == a[:, :-1]))


def _mean_hue_shift(img: Image.Image, ref: Image.Image) -> float:
    h0, h1 = rgb2hsv(_arr(ref)), rgb2hsv(_arr(img))
    keep = (h0[..., 1] > 0.3) & (h0[..., 2] > 0.3)  # hue is only meaningful for coloured pixels
    d = np.angle(np.exp(2j * np.pi * (h1[..., 0] - h0[..., 0]))[keep]) / (2 * np.pi)
    return float(np.median(d))


def _mae(img: Image.Image, ref: Image.Image) -> float:
    return float(np.mean(np.abs(_arr(img) - _arr(ref))))


# Per corruption: a statistic and whether it must rise (+1) or fall (-1) strictly with the level.
STATISTIC = {
    "brightness": (lambda img, ref: float(rgb2hsv(_arr(img))[..., 2].mean()), +1),
    "saturate": (lambda img, ref: float(rgb2hsv(_arr(img))[..., 1].mean()), +1),
    "hue": (_mean_hue_shift, +1),
    "jpeg": (lambda img, ref: _png_bytes(img), -1),
    "pixelate": (lambda img, ref: _equal_neighbours(img), +1),
    "defocus_blur": (lambda img, ref: _hf_energy(img), -1),
    "motion_blur": (lambda img, ref: _hf_energy(img), -1),
    "bubble_blur": (_mae, +1),
}


def test_every_corruption_every_level_is_deterministic_and_monotone(photo: Image.Image) -> None:
    """All 8 corruptions × levels 0..5: same seed → identical pixels; the statistic is monotone."""
    assert sorted(STATISTIC) == sorted(NAMES) and len(NAMES) == 8
    for name in NAMES:
        stat, sign = STATISTIC[name]
        values = []
        for level in range(6):
            a = corrupt(photo, name, level, seed=3, key="img")
            b = corrupt(photo, name, level, seed=3, key="img")
            assert a.size == photo.size and a.mode == "RGB"
            assert np.array_equal(np.asarray(a), np.asarray(b)), (name, level)
            values.append(stat(a, photo))
        assert np.array_equal(np.asarray(corrupt(photo, name, 0)), np.asarray(photo))  # level 0 = identity
        diffs = sign * np.diff(values)
        assert np.all(diffs > 0), (
            f"{name}: {values} not strictly {'increasing' if sign > 0 else 'decreasing'}"
        )


def test_hue_shift_equals_the_specified_amount_and_wraps(photo: Image.Image) -> None:
    shifts = [_mean_hue_shift(corrupt(photo, "hue", lv), photo) for lv in range(1, 6)]
    assert np.allclose(shifts, [0.02, 0.04, 0.06, 0.08, 0.10], atol=0.004)
    red = Image.new("RGB", (8, 8), (255, 0, 12))  # hue ≈ 0.992: +0.10 wraps past 1
    h = rgb2hsv(_arr(corrupt(red, "hue", 5)))[..., 0]
    assert np.allclose(h, (rgb2hsv(_arr(red))[..., 0] + 0.10) % 1.0, atol=0.005)
    assert float(h.mean()) < 0.2


def test_brightness_and_saturation_add_the_specified_amounts() -> None:
    grey_blue = Image.new("RGB", (10, 6), (60, 60, 120))  # HSV s = 0.5, v ≈ 0.47
    v0, s0 = rgb2hsv(_arr(grey_blue))[0, 0, 2], rgb2hsv(_arr(grey_blue))[0, 0, 1]
    for lv, c in enumerate((0.05, 0.10, 0.15, 0.20, 0.25), start=1):
        assert rgb2hsv(_arr(corrupt(grey_blue, "brightness", lv)))[0, 0, 2] == pytest.approx(
            v0 + c, abs=0.006
        )
        assert rgb2hsv(_arr(corrupt(grey_blue, "saturate", lv)))[0, 0, 1] == pytest.approx(s0 + c, abs=0.01)


def test_seeded_parts_depend_on_seed_and_image_not_on_order(photo: Image.Image) -> None:
    for name in ("motion_blur", "bubble_blur"):
        a = np.asarray(corrupt(photo, name, 3, seed=0, key="x"))
        assert not np.array_equal(a, np.asarray(corrupt(photo, name, 3, seed=1, key="x")))
        assert not np.array_equal(a, np.asarray(corrupt(photo, name, 3, seed=0, key="y")))
    buf = io.BytesIO()
    photo.save(buf, format="PNG")
    refs = {k: ImageRef(key=k, data=buf.getvalue()) for k in ("p", "q")}
    items = [
        Item(id=f"i{k}", benchmark="b", split="s", task="t", question="?", images=(refs[k],)) for k in "pq"
    ]
    fwd = corrupt_items(items, "motion_blur", 4, seed=7)
    rev = corrupt_items(items[::-1], "motion_blur", 4, seed=7)[::-1]
    for a, b in zip(fwd, rev, strict=True):
        assert a.images[0].key == b.images[0].key
        assert np.array_equal(np.asarray(a.images[0].load()), np.asarray(b.images[0].load()))


@pytest.mark.parametrize("size", [(180, 96), (61, 233)])
def test_non_square_grayscale_and_rgba_images(photo: Image.Image, size: tuple[int, int]) -> None:
    rgb = photo.resize(size)
    for name in NAMES:
        for img, mode in ((rgb, "RGB"), (rgb.convert("L"), "L"), (rgb.convert("RGBA"), "RGBA")):
            out = corrupt(img, name, 4, seed=0, key="k")
            expect = "RGB" if (mode == "L" and name == "saturate") else mode
            assert out.size == size and out.mode == expect, (name, mode)
        half_alpha = rgb.convert("RGBA")
        half_alpha.putalpha(128)
        assert np.all(np.asarray(corrupt(half_alpha, name, 5, key="k"))[..., 3] == 128)
    grey = rgb.convert("L")
    assert np.array_equal(np.asarray(corrupt(grey, "hue", 5)), np.asarray(grey))  # grey has no hue
    assert _hf_energy(corrupt(grey, "defocus_blur", 5)) < _hf_energy(grey)


@pytest.mark.parametrize("side", [112, 224, 448])
def test_blur_radius_scales_with_the_shorter_side(side: int) -> None:
    """A 5×5 white square blurred by defocus level 5 (disk radius 10 px at 224) spreads over the
    disk ⊕ square, of area ≈ π(10·side/224 + 2.5)²: the radius follows the shorter side."""
    img = Image.new("L", (side, side + 40), 0)  # non-square: the shorter side sets the scale
    img.paste(255, (side // 2 - 2, side // 2 - 2, side // 2 + 3, side // 2 + 3))
    area = int(np.sum(np.asarray(corrupt(img, "defocus_blur", 5), dtype=float) > 0))
    expected = np.pi * (10 * side / 224 + 2.5) ** 2
    assert area == pytest.approx(expected, rel=0.1)


def test_transforms_are_lazy_and_keys_change(photo: Image.Image) -> None:
    calls = {"n": 0}

    def loader() -> Image.Image:
        calls["n"] += 1
        return photo

    ref = ImageRef(key="lazy.png", loader=loader)
    items = [Item(id="a", benchmark="b", split="s", task="t", question="?", images=(ref,))]
    assert {"corrupt", "noise"} <= set(available_transforms())
    for spec in [f"corrupt:{n}:3" for n in NAMES] + ["noise"]:
        out = apply_transform(spec, items, 5)
        assert calls["n"] == 0, f"{spec} decoded an image at transform time"
        new = out[0].images[0]
        assert new.key.startswith("lazy.png#") and new.key != ref.key
    got = apply_transform("corrupt:jpeg:3", items, 5)[0].images[0].load()
    assert calls["n"] == 1 and got.size == photo.size
    assert apply_transform("corrupt:jpeg:0", items, 5)[0].images[0] is ref  # level 0: untouched


def test_noise_images_match_size_and_distribution(tmp_path: Path) -> None:
    p = tmp_path / "x.png"
    Image.new("RGB", (150, 90), (200, 10, 10)).save(p)
    items = [
        Item(id="a", benchmark="b", split="s", task="t", question="?", images=(ImageRef(key="x", path=p),))
    ]
    a = noise_items(items, seed=1)[0].images[0].load()
    b = noise_items(items, seed=1)[0].images[0].load()
    c = noise_items(items, seed=2)[0].images[0].load()
    assert a.size == (150, 90)
    arr = _arr(a)
    assert np.array_equal(np.asarray(a), np.asarray(b)) and not np.array_equal(np.asarray(a), np.asarray(c))
    assert arr.mean() == pytest.approx(NOISE_MEAN, abs=0.01)
    assert arr.std() == pytest.approx(NOISE_STD, abs=0.02)  # clipping trims ~5% of the tails
    assert abs(arr[..., 0].mean() - arr[..., 1].mean()) < 0.01  # no colour of the original leaks


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("jpeg", "NAME:LEVEL"),
        ("jpeg:6", "0..5"),
        ("fog:2", "unknown corruption 'fog'"),
        ("jpeg:x", "NAME:LEVEL"),
    ],
)
def test_bad_corruption_arguments(arg: str, message: str) -> None:
    with pytest.raises(ScopebenchError, match=message):
        parse_corruption_arg(arg)


def test_aliases() -> None:
    assert parse_corruption_arg("saturation:2") == ("saturate", 2)
    assert parse_corruption_arg("bubble:5") == ("bubble_blur", 5)


def test_tiny_images_and_other_modes_do_not_break() -> None:
    """1×1 and 2×3 px images (kernels larger than the image) and palette/16-bit/CMYK/LA inputs."""
    expected_mode = {"P": "RGB", "I;16": "RGB", "CMYK": "RGB", "LA": "RGBA"}
    for size in ((1, 1), (2, 3)):
        for mode, out_mode in expected_mode.items():
            img = Image.new(mode, size)
            for name in NAMES:
                out = corrupt(img, name, 5, key="k")
                assert out.size == size and out.mode == out_mode, (name, mode, size)
