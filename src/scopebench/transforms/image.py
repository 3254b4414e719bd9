"""Image corruptions of PathMMU §4.2 (Table 2, Fig. 4) and Gaussian-noise images (Table 3).

Eight corruptions, five severity levels each (level 0 is the identity), with the parameters of the
PathMMU authors' pathology-robustness work, which are specified for 224 px images:

============  ==========================================================================
brightness    HSV value + 0.05 / 0.10 / 0.15 / 0.20 / 0.25 (clipped to [0, 1])
saturate      HSV saturation + 0.05 / 0.10 / 0.15 / 0.20 / 0.25 (clipped to [0, 1])
hue           HSV hue + 0.02 / 0.04 / 0.06 / 0.08 / 0.10, wrapping around the colour circle
jpeg          JPEG quality 25 / 18 / 15 / 10 / 7
pixelate      down-scale to 0.6 / 0.5 / 0.4 / 0.3 / 0.25 of the size and back (box filter)
defocus_blur  disk kernel of radius 3 / 4 / 6 / 8 / 10 px, softened by a Gaussian of σ
              0.1 / 0.5 / 0.5 / 0.5 / 0.5 px ("alias blur")
motion_blur   one-sided Gaussian line kernel of radius/σ (10, 3) / (15, 5) / (15, 8) /
              (15, 12) / (20, 15) px at a seeded random angle in [−45°, 45°]
bubble_blur   a procedurally generated bubble layer blended at 0.1 / 0.3 / 0.5 / 0.7 / 0.9
============  ==========================================================================

**Any image size.** Every length in pixels (disk radius and alias σ, motion radius and σ, bubble
radii and the bubble's inner blur) is multiplied by ``min(width, height) / 224``, so a corruption
removes the same fraction of the image's detail whatever its resolution; a 448 px image gets a
radius-6 disk at level 1. Pixelation and JPEG are already relative (a scale factor, a quality),
and the colour shifts act per pixel. Very small images (under ~40 px) see little blur at level 1.

**Bubble texture.** The original bubble texture image of the pathology-robustness work is not
public, so the bubble layer is generated procedurally: seeded circles (radius 5–20 % of the
shorter side) with a dark refractive rim, a hazy interior that shows the image blurred, and a
small specular highlight, like air bubbles under a coverslip. Inside the bubbles the image is
blended with that layer at the level's weight: ``out = img·(1 − a·M) + a·M·bubble``, with ``M`` the
soft bubble mask and ``a`` the weight. Numbers on this corruption are therefore not the paper's.

**Determinism.** Random parts (motion angle, bubble layout, noise pixels) are drawn from a
generator seeded by ``(run seed, corruption, image key)``, never by order: the same image gets the
same corruption in any run, and items that share an image share its corrupted version (so the
engine's per-image caches stay valid). The level is not part of the seed, so one image keeps its
motion angle and bubble layout across levels and only the strength changes.

**Images stay lazy.** The transforms replace each :class:`~scopebench.items.ImageRef` by one whose
loader decodes the original and corrupts it when a backend asks for pixels; nothing is decoded
when the transform runs. The new key (``<key>#<corruption>:<level>@<seed>``) keeps corrupted and
clean images apart in any cache.

**Mode handling.** Grayscale (``L``) images stay grayscale, except ``saturate``, which adds colour
and returns RGB (``hue`` leaves a grey image unchanged: it has no saturation to rotate). An alpha
channel is kept untouched while the colour channels are corrupted. Other modes are converted to RGB
(RGBA when they carry transparency) first.

**Noise images** (``noise`` transform, PathMMU Table 3): every image is replaced by an image of the
same size (RGB) whose pixels are drawn independently from N(0.5, 0.25²) in [0, 1] units and
clipped to [0, 1]. A fixed distribution is used rather than the original's per-channel mean and
standard deviation on purpose: those statistics would leak information (a stain's colour tells H&E
from IHC), and the probe asks what a model answers when the image carries *none*. Mean 0.5 with
σ 0.25 fills the range with ~95 % of pixels unclipped.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from PIL import Image

from scopebench.errors import ScopebenchError
from scopebench.items import ImageRef, Item
from scopebench.transforms import register_transform

__all__ = [
    "CORRUPTIONS",
    "LEVELS",
    "NOISE_MEAN",
    "NOISE_STD",
    "REFERENCE_SIZE",
    "corrupt",
    "corrupt_items",
    "noise_image",
    "noise_items",
    "parse_corruption_arg",
]

#: The size (shorter side, px) at which the published parameters are specified.
REFERENCE_SIZE = 224
#: Severity levels (0 is the identity).
LEVELS = (0, 1, 2, 3, 4, 5)
#: Mean and standard deviation of the noise images, in [0, 1] pixel units.
NOISE_MEAN = 0.5
NOISE_STD = 0.25

_BRIGHTNESS = (0.05, 0.10, 0.15, 0.20, 0.25)
_SATURATE = (0.05, 0.10, 0.15, 0.20, 0.25)
_HUE = (0.02, 0.04, 0.06, 0.08, 0.10)
_JPEG = (25, 18, 15, 10, 7)
_PIXELATE = (0.6, 0.5, 0.4, 0.3, 0.25)
_DEFOCUS = ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5))
_MOTION = ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))
_BUBBLE = (0.1, 0.3, 0.5, 0.7, 0.9)

# Aliases accepted on the command line for the canonical names (which match PathMMU Table 2).
_ALIASES = {
    "saturation": "saturate",
    "defocus": "defocus_blur",
    "motion": "motion_blur",
    "bubble": "bubble_blur",
}


# Array helpers -------------------------------------------------------------------------------------


def _normalise_mode(img: Image.Image) -> Image.Image:
    if img.mode in ("L", "RGB", "RGBA"):
        return img
    if "A" in img.mode or "transparency" in img.info:
        return img.convert("RGBA")
    return img.convert("RGB")


def _split(img: Image.Image) -> tuple[np.ndarray, np.ndarray | None, str]:
    """Float colour array ``H×W×C`` in [0, 1], the alpha channel (uint8) or ``None``, and the mode."""
    img = _normalise_mode(img)
    arr = np.asarray(img)
    if img.mode == "L":
        return arr[..., None].astype(np.float32) / 255.0, None, "L"
    if img.mode == "RGBA":
        return arr[..., :3].astype(np.float32) / 255.0, arr[..., 3].copy(), "RGBA"
    return arr.astype(np.float32) / 255.0, None, "RGB"


def _join(colour: np.ndarray, alpha: np.ndarray | None) -> Image.Image:
    """Back to a PIL image (rounded, clipped); ``L`` for one channel, RGBA when ``alpha`` is given."""
    u8 = (np.clip(colour, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    if u8.shape[-1] == 1:
        return Image.fromarray(u8[..., 0], mode="L")
    if alpha is not None:
        return Image.fromarray(np.dstack([u8, alpha]), mode="RGBA")
    return Image.fromarray(u8, mode="RGB")


def _scale(img_hw: tuple[int, int]) -> float:
    """Factor applied to pixel lengths: the shorter side over the 224 px reference."""
    return min(img_hw) / REFERENCE_SIZE


def _rng(seed: int, name: str, key: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}\x00{name}\x00{key}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _convolve(colour: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Convolve each channel with ``kernel``, mirroring the border (like OpenCV's default)."""
    from scipy.signal import fftconvolve

    ky, kx = kernel.shape
    py, px = ky // 2, kx // 2
    # np.pad "reflect" only reflects up to size − 1; "symmetric" stays valid for larger pads.
    pad = ((py, ky - 1 - py), (px, kx - 1 - px), (0, 0))
    if py < colour.shape[0] and px < colour.shape[1]:
        padded = np.pad(colour, pad, mode="reflect")
    else:
        padded = np.pad(colour, pad, mode="symmetric")
    out = np.stack([fftconvolve(padded[..., c], kernel, mode="valid") for c in range(colour.shape[-1])], -1)
    return out.astype(np.float32)


# Colour shifts ---------------------------------------------------------------------------------------


def _hsv_shift(colour: np.ndarray, channel: int, amount: float, wrap: bool) -> np.ndarray:
    from skimage.color import hsv2rgb, rgb2hsv

    hsv = rgb2hsv(colour)
    if wrap:
        hsv[..., channel] = np.mod(hsv[..., channel] + amount, 1.0)
    else:
        hsv[..., channel] = np.clip(hsv[..., channel] + amount, 0.0, 1.0)
    return np.asarray(hsv2rgb(hsv), dtype=np.float32)


def _brightness(img: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    colour, alpha, _ = _split(img)
    c = _BRIGHTNESS[level - 1]
    if colour.shape[-1] == 1:  # a grey value *is* the HSV value
        return _join(colour + c, None)
    return _join(_hsv_shift(colour, 2, c, wrap=False), alpha)


def _saturate(img: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    colour, alpha, _ = _split(img)
    if colour.shape[-1] == 1:  # adding saturation adds colour: the result is RGB
        colour = np.repeat(colour, 3, axis=-1)
    return _join(_hsv_shift(colour, 1, _SATURATE[level - 1], wrap=False), alpha)


def _hue(img: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    colour, alpha, _ = _split(img)
    if colour.shape[-1] == 1:  # grey has no saturation: rotating its hue changes nothing
        return _join(colour, None)
    return _join(_hsv_shift(colour, 0, _HUE[level - 1], wrap=True), alpha)


# Compression and resolution ------------------------------------------------------------------------


def _jpeg(img: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    img = _normalise_mode(img)
    alpha = img.getchannel("A") if img.mode == "RGBA" else None
    base = img.convert("RGB") if alpha is not None else img
    buf = io.BytesIO()
    base.save(buf, format="JPEG", quality=_JPEG[level - 1])
    buf.seek(0)
    with Image.open(buf) as decoded:
        out = decoded.convert(base.mode)
    if alpha is not None:
        out.putalpha(alpha)
    return out


def _pixelate(img: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    img = _normalise_mode(img)
    c = _PIXELATE[level - 1]
    w, h = img.size
    alpha = img.getchannel("A") if img.mode == "RGBA" else None
    base = img.convert("RGB") if alpha is not None else img
    small = base.resize((max(1, int(w * c)), max(1, int(h * c))), Image.Resampling.BOX)
    out = small.resize((w, h), Image.Resampling.BOX)
    if alpha is not None:
        out.putalpha(alpha)
    return out


# Blurs -----------------------------------------------------------------------------------------------


def _disk(radius: float, alias_blur: float) -> np.ndarray:
    """A normalised disk of ``radius`` px, softened by a Gaussian of σ ``alias_blur`` px."""
    from scipy.ndimage import gaussian_filter

    half = math.ceil(radius + 3 * alias_blur) + 1
    grid = np.arange(-half, half + 1)
    xx, yy = np.meshgrid(grid, grid)
    disk = (xx**2 + yy**2 <= radius**2).astype(np.float64)
    disk /= disk.sum()
    soft = gaussian_filter(disk, sigma=alias_blur, mode="constant") if alias_blur > 0 else disk
    return np.asarray(soft / soft.sum())


def _defocus_blur(img: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    colour, alpha, _ = _split(img)
    s = _scale(colour.shape[:2])
    radius, alias = _DEFOCUS[level - 1]
    return _join(_convolve(colour, _disk(radius * s, alias * s)), alpha)


def _motion_kernel(radius: float, sigma: float, angle_deg: float) -> np.ndarray:
    """One-sided Gaussian weights along a line at ``angle_deg``, as a 2-D kernel.

    As in ImageMagick's ``-motion-blur radius×sigma+angle`` (which the ImageNet-C family of
    corruptions calls): tap ``i`` of ``2·radius + 1`` sits ``i`` px along the direction with weight
    ``exp(−i²/2σ²)``, normalised. Each output pixel averages the input ``i`` px back along the
    direction, as ImageNet-C's NumPy re-implementation shifts and sums (the streak is one-sided).
    """
    width = 2 * max(0, round(radius)) + 1
    weights = np.exp(-(np.arange(width) ** 2) / (2 * max(sigma, 1e-6) ** 2))
    weights /= weights.sum()
    theta = math.radians(angle_deg)
    dy = [-math.ceil(i * math.sin(theta) - 0.5) for i in range(width)]
    dx = [-math.ceil(i * math.cos(theta) - 0.5) for i in range(width)]
    reach = max(max(abs(v) for v in dy), max(abs(v) for v in dx))
    kernel = np.zeros((2 * reach + 1, 2 * reach + 1))
    for w, oy, ox in zip(weights, dy, dx, strict=True):
        # Convolution: out(p) = Σ_o k(o)·in(p − o), so tap i at offset (dy, dx) reads in(p − d_i).
        kernel[reach + oy, reach + ox] += w
    return kernel


def _motion_blur(img: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    colour, alpha, _ = _split(img)
    s = _scale(colour.shape[:2])
    radius, sigma = _MOTION[level - 1]
    angle = float(rng.uniform(-45.0, 45.0))
    return _join(_convolve(colour, _motion_kernel(radius * s, sigma * s, angle)), alpha)


def bubble_layer(height: int, width: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A procedural bubble layer: (soft mask ``M`` in [0, 1], shading ``L`` in [0, 1]), both ``H×W``.

    Bubbles: radius 5–20 % of the shorter side, centres uniform over the image, about one bubble per
    ``(shorter side)²`` area × 8. Shading: bright haze inside (0.85), a dark rim over the outer 15 %
    of the radius (0.2) and a specular highlight up-left of the centre (1.0).
    """
    short = min(height, width)
    n = max(1, round(8 * height * width / short**2))
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    mask = np.zeros((height, width), np.float32)
    shade = np.full((height, width), 0.85, np.float32)
    for _ in range(n):
        r = float(rng.uniform(0.05, 0.20)) * short
        cy, cx = float(rng.uniform(0, height)), float(rng.uniform(0, width))
        rho = np.hypot(yy - cy, xx - cx) / max(r, 1e-6)
        inside = np.clip((1.0 - rho) * r, 0.0, 1.0)  # 1 px soft edge
        mask = np.maximum(mask, inside)
        rim = (rho > 0.85) & (rho <= 1.0)
        shade[rim] = np.minimum(shade[rim], 0.2)
        hl = np.hypot(yy - (cy - 0.4 * r), xx - (cx - 0.4 * r)) <= 0.15 * r
        shade[hl & (rho <= 1.0)] = 1.0
    return mask, shade


def _bubble_blur(img: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    from scipy.ndimage import gaussian_filter

    colour, alpha, _ = _split(img)
    h, w = colour.shape[:2]
    s = _scale((h, w))
    mask, shade = bubble_layer(h, w, rng)
    hazy = np.stack([gaussian_filter(colour[..., c], 2.0 * s) for c in range(colour.shape[-1])], -1)
    bubble = 0.6 * hazy + 0.4 * shade[..., None]
    a = _BUBBLE[level - 1] * mask[..., None]
    return _join(colour * (1.0 - a) + bubble * a, alpha)


CorruptionFn = Callable[[Image.Image, int, np.random.Generator], Image.Image]

#: Corruption name → function ``(image, level 1..5, rng) -> image``; names as in PathMMU Table 2.
CORRUPTIONS: dict[str, CorruptionFn] = {
    "brightness": _brightness,
    "saturate": _saturate,
    "hue": _hue,
    "jpeg": _jpeg,
    "pixelate": _pixelate,
    "defocus_blur": _defocus_blur,
    "motion_blur": _motion_blur,
    "bubble_blur": _bubble_blur,
}


def canonical_corruption(name: str) -> str:
    """The canonical corruption name for ``name`` or an alias.

    Raises:
        ScopebenchError: For an unknown corruption.
    """
    canon = _ALIASES.get(name, name)
    if canon not in CORRUPTIONS:
        raise ScopebenchError(f"unknown corruption {name!r}; known: {', '.join(CORRUPTIONS)}")
    return canon


def corrupt(img: Image.Image, name: str, level: int, *, seed: int = 0, key: str = "") -> Image.Image:
    """Apply corruption ``name`` at ``level`` (0 = unchanged copy) to ``img``.

    Args:
        img: Any PIL image (grayscale, RGB, RGBA, other modes converted).
        name: A corruption name (see :data:`CORRUPTIONS`) or alias.
        level: Severity 0..5.
        seed: Run seed.
        key: The image's identity; with ``seed`` and ``name`` it seeds the random parts.

    Raises:
        ScopebenchError: For an unknown corruption or a level outside 0..5.
    """
    canon = canonical_corruption(name)
    if level not in LEVELS:
        raise ScopebenchError(f"corruption level must be one of 0..5, got {level}")
    if level == 0:
        return img.copy()
    return CORRUPTIONS[canon](img, level, _rng(seed, canon, key))


def noise_image(size: tuple[int, int], mode: str, *, seed: int = 0, key: str = "") -> Image.Image:
    """An image of ``size`` (width, height) of i.i.d. N(:data:`NOISE_MEAN`, :data:`NOISE_STD`²) pixels.

    ``mode`` ``L`` gives one channel, anything else RGB.
    """
    w, h = size
    channels = 1 if mode == "L" else 3
    rng = _rng(seed, "noise", key)
    pixels = rng.normal(NOISE_MEAN, NOISE_STD, size=(h, w, channels)).astype(np.float32)
    return _join(pixels, None)


# Transforms ------------------------------------------------------------------------------------------


def _wrap(ref: ImageRef, tag: str, make: Callable[[ImageRef], Image.Image]) -> ImageRef:
    # The loader closes over the original reference: nothing is read until a backend asks.
    return ImageRef(key=f"{ref.key}#{tag}", loader=lambda: make(ref))


def parse_corruption_arg(arg: str) -> tuple[str, int]:
    """Parse ``NAME:LEVEL`` (the ``corrupt`` transform's argument).

    Raises:
        ScopebenchError: When the argument is malformed, the name unknown or the level not 0..5.
    """
    name, sep, lvl = arg.partition(":")
    if not sep or not lvl.strip().isdigit():
        raise ScopebenchError(
            f"the corrupt transform takes NAME:LEVEL (e.g. corrupt:jpeg:3), got {arg!r}; "
            f"names: {', '.join(CORRUPTIONS)}"
        )
    level = int(lvl)
    if level not in LEVELS:
        raise ScopebenchError(f"corruption level must be one of 0..5, got {level}")
    return canonical_corruption(name.strip()), level


def corrupt_items(items: Sequence[Item], name: str, level: int, seed: int) -> list[Item]:
    """Items whose images are corrupted lazily with ``name`` at ``level`` (level 0: unchanged)."""
    canon = canonical_corruption(name)
    if level == 0:
        return list(items)

    def make(ref: ImageRef) -> Image.Image:
        return corrupt(ref.load(), canon, level, seed=seed, key=ref.key)

    tag = f"{canon}:{level}@{seed}"
    return [replace(it, images=tuple(_wrap(r, tag, make) for r in it.images)) for it in items]


def noise_items(items: Sequence[Item], seed: int) -> list[Item]:
    """Items whose every image is replaced (lazily) by Gaussian noise of the same size."""

    def make(ref: ImageRef) -> Image.Image:
        return noise_image(ref.size(), "RGB", seed=seed, key=ref.key)

    return [replace(it, images=tuple(_wrap(r, f"noise@{seed}", make) for r in it.images)) for it in items]


@register_transform("corrupt")
def _corrupt_transform(items: Sequence[Item], arg: str, seed: int) -> list[Item]:
    """``corrupt:NAME:LEVEL`` — PathMMU §4.2 corruption of every image."""
    name, level = parse_corruption_arg(arg)
    return corrupt_items(items, name, level, seed)


@register_transform("noise")
def _noise_transform(items: Sequence[Item], arg: str, seed: int) -> list[Item]:
    """``noise`` — every image replaced by Gaussian noise of the same size (PathMMU Table 3)."""
    if arg:
        raise ScopebenchError(f"the noise transform takes no argument, got {arg!r}")
    return noise_items(items, seed)
