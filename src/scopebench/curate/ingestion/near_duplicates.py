"""Near-duplicate images: a perceptual hash proposes pairs, the pixels confirm them.

**Proposing (sub-quadratic).** Two 64-bit hashes within ``r`` bits of each other agree exactly on
at least ``m − r`` of any ``m`` disjoint blocks of their bits (pigeonhole: at most ``r`` blocks hold
a differing bit). With ``m = r + 4`` blocks, every choice of 4 blocks is one table: hashes are
sorted by their bits in those blocks and only hashes with equal keys become candidates, which are
then checked bit by bit. Each of the ``C(r + 4, 4)`` tables (210 at ``r = 6``) costs one sort, and
the keys are ≈ ``256 / (r + 4)`` bits long (25 at ``r = 6``), so unrelated hashes almost never
collide: the work grows as ``n log n``, not ``n²``. Every pair within ``r`` bits is found.

**Confirming (pixels).** Images sharing a background, a texture or a stain have close hashes
without being the same picture, so a proposed pair is grouped only when its pixels agree
(:func:`pixel_similarity`): both images as grey, each stretched between its own 1st and 99th
percentiles (so contrast and bit-depth changes cancel), compared with SSIM on a common grid; the
score is the *lowest* SSIM of a 4 × 4 grid of blocks, so one region that differs (a different cell
on the same background) is enough to refuse the pair. Two alignments are tried: the whole images
rescaled onto each other (re-encodings, 8/16-bit, rescales, contrast changes), and the smaller image
located inside the larger at the same pixel size (crops); the better score counts.

**Confirming at scale.** Unrelated smooth images (illumination fields, empty backgrounds) have weak
hashes and are proposed in bulk, so each image is compared as its stretched 64 × 64 grid (32 kB,
:func:`stretched_grid`): given by the caller (ingest computes it where the image is converted and
stores it beside the PNG) or made when the image's first pair needs it, decoding the image once. No
grid stays in memory: each is written once to a temporary file and read back for the batch that
needs it (at most two grids per pair of the batch are held), and thumbnails (for crops) stay in a
bounded cache; what is held per pair is packed (the candidate pairs as a NumPy array, the refused
pairs as machine numbers: 16 and 32 bytes a pair), so the pixels held do not grow with the images.
Pairs are scored in batches: the SSIM terms of each image are computed once per batch and only the
cross term per pair, vectorized over the batch (:func:`_batch_block_ssim`, the same arithmetic as
:func:`skimage.metrics.structural_similarity`); a score within ``1e-4`` of the threshold is
recomputed pair by pair, so the decisions are exactly those of :func:`similarity`.
"""

from __future__ import annotations

import itertools
import tempfile
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

import numpy as np
from scipy.ndimage import uniform_filter

__all__ = [
    "DEFAULT_MIN_SIMILARITY",
    "GRID_SIDE",
    "SIMILARITY_VERSION",
    "NearDuplicates",
    "RefusedPairs",
    "StoredGrid",
    "Thumbnail",
    "candidate_pairs",
    "find_near_duplicates",
    "pixel_similarity",
    "similarity",
    "stretched_grid",
    "thumbnail",
]

#: Block-minimum SSIM at or above which a proposed pair is a near-duplicate (docs/build.md gives
#: the error rates measured at this value).
DEFAULT_MIN_SIMILARITY = 0.85
#: Part of every remembered score's key: bumped whenever :func:`similarity` changes, so a score
#: computed by older rules is never reused.
SIMILARITY_VERSION = "1"
_EXACT_BLOCKS = 4
_MAX_TABLES = 5000  # beyond this (r ≥ 17 bits) one all-pairs pass in blocks is cheaper
_FOLD = 1 << 20  # pairs found by the index tables before repeats are folded away (8 MB)
_GRID = 64  # side of the common grid the pixels are compared on
#: Side of :func:`stretched_grid`'s square.
GRID_SIDE = _GRID
_CROP_SIDE = 256  # a thumbnail's long side: where crops are searched for
_THUMBNAILS = 256  # thumbnails kept while pairs are checked (≤ 256 kB each)
_BATCH = 256  # pairs scored at once: 4 MB per float32 term of the batch, ≈ 40 MB in all
_WIN = 7  # SSIM window, as structural_similarity(win_size=7)
_RECHECK = 1e-4  # a batched score this close to the threshold is recomputed one pair at a time

#: An image's original ``(height, width)`` and its :func:`stretched_grid`.
StoredGrid = tuple[tuple[int, int], np.ndarray]


def _as_uint64(hashes: Sequence[str] | np.ndarray) -> np.ndarray:
    if isinstance(hashes, np.ndarray):
        return hashes.astype(np.uint64, copy=False)
    return np.array([int(h, 16) for h in hashes], dtype=np.uint64)


def _block_masks(blocks: int) -> list[np.uint64]:
    edges = np.linspace(0, 64, blocks + 1).round().astype(int)
    return [np.uint64(((1 << int(hi - lo)) - 1) << int(lo)) for lo, hi in itertools.pairwise(edges)]


def _pairs_with_equal_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``(i, j)``, ``i < j``, of every two entries of ``keys`` that are equal."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    firsts: list[np.ndarray] = []
    seconds: list[np.ndarray] = []
    gap = 1
    while gap < len(ordered):
        same = np.nonzero(ordered[gap:] == ordered[:-gap])[0]
        if not len(same):
            break  # equal keys are contiguous: no run is longer than this gap
        a, b = order[same], order[same + gap]
        firsts.append(np.minimum(a, b))
        seconds.append(np.maximum(a, b))
        gap += 1
    if not firsts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    return np.concatenate(firsts), np.concatenate(seconds)


def _all_pairs(values: np.ndarray, max_bits: int) -> np.ndarray:
    codes: list[np.ndarray] = []
    n = len(values)
    for i in range(n - 1):
        close = np.nonzero(np.bitwise_count(values[i + 1 :] ^ values[i]) <= max_bits)[0]
        codes.append(i * n + i + 1 + close.astype(np.int64))
    return np.concatenate(codes) if codes else np.empty(0, dtype=np.int64)


def candidate_pairs(hashes: Sequence[str] | np.ndarray, max_bits: int) -> np.ndarray:
    """Every pair of hashes within ``max_bits`` bits, as sorted rows ``(i, j)`` with ``i < j``.

    Args:
        hashes: 64-bit hashes, as hex strings or unsigned integers.
        max_bits: The largest Hamming distance of a pair.

    Returns:
        An ``(k, 2)`` int64 array, sorted by ``i`` then ``j``, each pair once.
    """
    values = _as_uint64(hashes)
    n = len(values)
    blocks = max_bits + _EXACT_BLOCKS
    if n < 2:
        return np.empty((0, 2), dtype=np.int64)
    if blocks > 64 or _n_tables(blocks) > _MAX_TABLES:
        codes = _all_pairs(values, max_bits)
    else:
        codes = _indexed_pairs(values, max_bits, blocks)
    codes = np.unique(codes)
    return np.stack([codes // n, codes % n], axis=1).astype(np.int64)


def _indexed_pairs(values: np.ndarray, max_bits: int, blocks: int) -> np.ndarray:
    """Codes ``i * n + j`` of the pairs within ``max_bits``, from one table per choice of blocks."""
    n = len(values)
    masks = _block_masks(blocks)
    codes = np.empty(0, dtype=np.int64)
    found: list[np.ndarray] = []
    held = 0
    for chosen in itertools.combinations(masks, _EXACT_BLOCKS):
        mask = np.bitwise_or.reduce(np.array(chosen, dtype=np.uint64))
        i, j = _pairs_with_equal_keys(values & mask)
        close = np.bitwise_count(values[i] ^ values[j]) <= max_bits
        found.append(i[close] * n + j[close])
        held += int(close.sum())
        # A close pair is found by every table whose blocks its differing bits miss (up to all
        # 210): folded into the distinct pairs once the repeats outweigh them, so that memory
        # follows the pairs, not the pairs times the tables that find them.
        if held > 2 * len(codes) + _FOLD:
            codes = np.unique(np.concatenate([codes, *found]))
            found, held = [], 0
    return np.concatenate([codes, *found])


def _n_tables(blocks: int) -> int:
    return (
        len(list(itertools.combinations(range(blocks), _EXACT_BLOCKS))) if blocks <= 24 else _MAX_TABLES + 1
    )


def _stretched(grey: np.ndarray) -> np.ndarray:
    """``grey`` (any numeric dtype) in [0, 1] between its own 1st and 99th percentiles.

    Float64: the percentiles are float64 scalars, which NumPy 2 does not narrow to the array's
    float32; stored grids keep that type so that scores stay exactly those of this function.
    """
    arr = grey.astype(np.float32)
    lo, hi = np.percentile(arr, (1, 99))
    if hi <= lo:
        return np.zeros_like(arr)
    stretched: np.ndarray = np.clip((arr - lo) / (hi - lo), 0.0, 1.0)
    return stretched


def _resized(arr: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    from skimage.transform import resize

    return np.asarray(resize(arr, shape, anti_aliasing=True, preserve_range=True), dtype=np.float32)


def _block_ssim(a: np.ndarray, b: np.ndarray) -> float:
    """The lowest mean SSIM over a 4 × 4 grid of blocks of two same-shaped images, each stretched."""
    return _block_ssim_stretched(_stretched(a), _stretched(b))


def _block_ssim_stretched(a: np.ndarray, b: np.ndarray) -> float:
    from skimage.metrics import structural_similarity

    _, full = structural_similarity(a, b, data_range=1.0, full=True, win_size=_WIN)
    rows = np.array_split(np.asarray(full), 4, axis=0)
    return float(min(block.mean() for row in rows for block in np.array_split(row, 4, axis=1)))


@dataclass(frozen=True, slots=True)
class Thumbnail:
    """A grey image reduced for comparison, with the size it had.

    Attributes:
        pixels: Float32 grey, long side at most 256 pixels (never enlarged).
        shape: The original height and width (crops are searched at the original pixel scale).
    """

    pixels: np.ndarray
    shape: tuple[int, int]


def thumbnail(grey: np.ndarray) -> Thumbnail:
    """``grey`` (H × W, any numeric dtype) as a :class:`Thumbnail`."""
    arr = grey.astype(np.float32)
    h, w = arr.shape
    scale = min(1.0, _CROP_SIDE / max(h, w))
    if scale < 1.0:
        arr = _resized(arr, (max(8, round(h * scale)), max(8, round(w * scale))))
    return Thumbnail(arr, (h, w))


def _crop_score(big: Thumbnail, small: Thumbnail) -> float:
    """Locate ``small`` inside ``big`` at the same pixel size; the block SSIM of the best placement.

    The search runs on ``big``'s thumbnail (long side at most 256 pixels, fine enough that the
    placement is within half a pixel there), with ``small`` brought to the same scale; the
    comparison then runs on the common grid like a whole-image one.
    """
    from skimage.feature import match_template

    scale = big.pixels.shape[0] / big.shape[0]
    target = (round(small.shape[0] * scale), round(small.shape[1] * scale))
    if min(target) < 8 or target[0] > big.pixels.shape[0] or target[1] > big.pixels.shape[1]:
        return -1.0
    small_s = small.pixels if small.pixels.shape == target else _resized(small.pixels, target)
    match = match_template(big.pixels, small_s)
    y, x = np.unravel_index(int(np.argmax(match)), match.shape)
    window = big.pixels[y : y + target[0], x : x + target[1]]
    return _block_ssim(_resized(window, (_GRID, _GRID)), _resized(small_s, (_GRID, _GRID)))


def _grid(t: Thumbnail) -> np.ndarray:
    """``t`` on the common grid whole images are compared on."""
    return _resized(t.pixels, (_GRID, _GRID))


def stretched_grid(grey: np.ndarray) -> np.ndarray:
    """``grey`` (H × W) as whole-image comparisons use it: its stretched 64 × 64 float64 grid.

    A grid passed to :func:`find_near_duplicates` must be this function's result for the image
    ``grey`` loads, so that scores do not depend on where the grid was made.
    """
    return _stretched(_grid(thumbnail(grey)))


def similarity(a: Thumbnail, b: Thumbnail) -> float:
    """:func:`pixel_similarity` of two thumbnails."""
    scores = [-1.0]
    (ha, wa), (hb, wb) = a.shape, b.shape
    if abs((wa / ha) / (wb / hb) - 1.0) <= 0.05:
        scores.append(_block_ssim(_grid(a), _grid(b)))
    big, small = (a, b) if ha * wa >= hb * wb else (b, a)
    (hg, wg), (hs, ws) = big.shape, small.shape
    if hs <= hg and ws <= wg and hs * ws < hg * wg:
        scores.append(_crop_score(big, small))
    return max(scores)


def pixel_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """How surely two grey images show the same picture: block-minimum SSIM, in [−1, 1].

    Args:
        a: A grey image (H × W, any numeric dtype).
        b: Another grey image.

    Returns:
        The better of the whole-image score (both rescaled to a 64 × 64 grid, for aspect ratios
        within 5 %) and the crop score (the smaller image found inside the larger at the same pixel
        size); see the module docstring.
    """
    return similarity(thumbnail(a), thumbnail(b))


def _ssim_terms(stretched: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Local means and (sample) variances of stretched images, as structural_similarity has them."""
    size = (1, _WIN, _WIN)  # the leading axis stacks images: no filtering across it
    cov_norm = _WIN**2 / (_WIN**2 - 1)
    mean = uniform_filter(stretched, size=size)
    return mean, cov_norm * (uniform_filter(stretched * stretched, size=size) - mean * mean)


def _batch_block_ssim(a: np.ndarray, b: np.ndarray, terms: tuple[np.ndarray, ...]) -> np.ndarray:
    """:func:`_block_ssim` of stacks of stretched grids ``a[k]``, ``b[k]`` (``K × 64 × 64``).

    ``terms`` are :func:`_ssim_terms` of ``a`` then of ``b``; the operations, their order and the
    float32 type follow :func:`skimage.metrics.structural_similarity` (uniform window, sample
    covariance, data range 1), so the SSIM maps are those of one pair at a time; only the block
    means may differ in the last bits (summation order).
    """
    ux, vx, uy, vy = terms
    cov_norm = _WIN**2 / (_WIN**2 - 1)
    c1, c2 = (0.01 * 1.0) ** 2, (0.03 * 1.0) ** 2
    vxy = cov_norm * (uniform_filter(a * b, size=(1, _WIN, _WIN)) - ux * uy)
    ssim = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux**2 + uy**2 + c1) * (vx + vy + c2))
    side = _GRID // 4
    blocks = ssim.reshape(len(ssim), 4, side, 4, side).mean(axis=(2, 4))
    return np.asarray(blocks.min(axis=(1, 2)), dtype=np.float64)


class _GridFile:
    """Grids written once to an unnamed temporary file and read back by image index.

    The file is in ``folder`` (``None``: the system's temporary folder) and disappears when closed,
    or when the process ends. Reading a grid back costs a ``seek`` and a 32 kB read from the page
    cache, small beside scoring it; holding every grid instead grew by 32 kB per image in a pair
    (640 MB at 20,000 images whose hashes all collide).
    """

    def __init__(self, folder: Path | None) -> None:
        # Lives across calls; find_near_duplicates closes it when the walk ends, however it ends.
        self._fh = tempfile.TemporaryFile(dir=folder, buffering=0)  # noqa: SIM115
        self._slots: dict[int, int] = {}

    def put(self, i: int, grid: np.ndarray) -> None:
        """Store (or replace) image ``i``'s grid, a ``64 × 64`` array of floats."""
        arr = np.ascontiguousarray(grid, dtype=np.float64)
        if arr.shape != (_GRID, _GRID):
            raise ValueError(f"a near-duplicate grid is {_GRID} × {_GRID}, not {arr.shape}")
        slot = self._slots.setdefault(i, len(self._slots))
        self._fh.seek(slot * arr.nbytes)
        self._fh.write(arr.data.cast("B"))

    def __contains__(self, i: int) -> bool:
        return i in self._slots

    def get(self, i: int) -> np.ndarray:
        """Image ``i``'s grid (stored by :meth:`put` before)."""
        arr = np.empty((_GRID, _GRID), dtype=np.float64)
        self._fh.seek(self._slots[i] * arr.nbytes)
        if self._fh.readinto(arr.data.cast("B")) != arr.nbytes:
            raise OSError("the temporary file of near-duplicate grids was cut short")
        return arr

    def close(self) -> None:
        self._fh.close()


class _Pixels:
    """The images of proposed pairs as the checks need them, each decoded once.

    A decode keeps the image's size for the whole run and its stretched 64 × 64 grid in a
    :class:`_GridFile`, and its thumbnail (≤ 256 kB) in a bounded cache: a pair of same-size
    images is scored on grids alone, so only pairs of different sizes (crops and rescales,
    searched on thumbnails) can make an image decoded again.
    """

    def __init__(
        self,
        grey: Callable[[int], np.ndarray],
        stored: Callable[[int], StoredGrid | None] | None,
        folder: Path | None = None,
    ) -> None:
        self._grey = grey
        self._stored = stored
        self.shapes: dict[int, tuple[int, int]] = {}
        self.grids = _GridFile(folder)
        self._thumbs: OrderedDict[int, Thumbnail] = OrderedDict()

    def _load(self, i: int) -> Thumbnail:
        thumb = thumbnail(self._grey(i))
        self.shapes[i] = thumb.shape
        self.grids.put(i, _stretched(_grid(thumb)))
        self._thumbs[i] = thumb
        if len(self._thumbs) > _THUMBNAILS:
            self._thumbs.popitem(last=False)
        return thumb

    def shape(self, i: int) -> tuple[int, int]:
        if i not in self.shapes:
            given = self._stored(i) if self._stored is not None else None
            if given is None:
                self._load(i)
            else:
                self.shapes[i] = given[0]
                self.grids.put(i, given[1])
        return self.shapes[i]

    def thumb(self, i: int) -> Thumbnail:
        if i not in self._thumbs:
            return self._load(i)
        self._thumbs.move_to_end(i)
        return self._thumbs[i]


class _Scorer:
    """Scores proposed pairs in batches: remembered by content, or computed and remembered."""

    def __init__(
        self,
        grey: Callable[[int], np.ndarray],
        min_similarity: float,
        scores: MutableMapping[str, float] | None,
        key: Callable[[int], str] | None,
        grids: Callable[[int], StoredGrid | None] | None = None,
        folder: Path | None = None,
    ) -> None:
        self.pixels = _Pixels(grey, grids, folder)
        self.min_similarity = min_similarity
        self.scores = scores
        self.key = key

    def _pair_key(self, i: int, j: int) -> str | None:
        if self.scores is None or self.key is None:
            return None
        # Ordered as proposed (the score of a pair is not exactly symmetric), with the version.
        return f"{SIMILARITY_VERSION}:{self.key(i)}:{self.key(j)}"

    def score(self, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], float]:
        """The similarity of each pair; images are loaded only for pairs not remembered."""
        out: dict[tuple[int, int], float] = {}
        todo: list[tuple[int, int]] = []
        for p in pairs:
            remembered = self._pair_key(*p)
            if self.scores is not None and remembered is not None and remembered in self.scores:
                out[p] = self.scores[remembered]
            else:
                todo.append(p)
        px = self.pixels
        same_size = [(i, j) for i, j in todo if px.shape(i) == px.shape(j)]
        for i, j in todo:
            if px.shape(i) != px.shape(j):  # the crop search needs thumbnails
                out[(i, j)] = similarity(px.thumb(i), px.thumb(j))
        out.update(self._same_size(same_size))
        for p in todo:
            remembered = self._pair_key(*p)
            if self.scores is not None and remembered is not None:
                self.scores[remembered] = out[p]
        return out

    def _same_size(self, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], float]:
        if not pairs:
            return {}
        # Read back once per batch, each image once: at most two grids per pair are held.
        grids = {i: self.pixels.grids.get(i) for i in sorted({i for pair in pairs for i in pair})}
        a = np.stack([grids[i] for i, _ in pairs])
        b = np.stack([grids[j] for _, j in pairs])
        found = _batch_block_ssim(a, b, (*_ssim_terms(a), *_ssim_terms(b)))
        out = dict(zip(pairs, found.tolist(), strict=True))
        for (i, j), value in out.items():
            if abs(value - self.min_similarity) < _RECHECK:  # decide exactly as one pair at a time
                out[(i, j)] = _block_ssim_stretched(grids[i], grids[j])
        return out


class RefusedPairs(Sequence[tuple[int, int, int, float]]):
    """Proposed pairs the pixels refused, ``(i, j, hash distance, pixel similarity)``, packed.

    A sequence of tuples to its readers, held as machine numbers (32 bytes a pair, against ≈ 170
    for a list of tuples): images whose hashes all collide have millions of refused pairs.
    """

    def __init__(self) -> None:
        self._ijb = array("q")  # i, j and the hash distance of each pair, one after the other
        self._score = array("d")

    def append(self, pair: tuple[int, int, int, float]) -> None:
        """Add one refused pair."""
        i, j, bits, score = pair
        self._ijb.extend((i, j, bits))
        self._score.append(score)

    def __len__(self) -> int:
        return len(self._score)

    @overload
    def __getitem__(self, k: int) -> tuple[int, int, int, float]: ...
    @overload
    def __getitem__(self, k: slice) -> list[tuple[int, int, int, float]]: ...
    def __getitem__(self, k: int | slice) -> tuple[int, int, int, float] | list[tuple[int, int, int, float]]:
        if isinstance(k, slice):
            return [self[x] for x in range(*k.indices(len(self)))]
        score = self._score[k]  # raises IndexError first; negative indices as a list's
        k %= len(self)
        return self._ijb[3 * k], self._ijb[3 * k + 1], self._ijb[3 * k + 2], score

    def __iter__(self) -> Iterator[tuple[int, int, int, float]]:
        ijb = iter(self._ijb)
        for score in self._score:
            yield next(ijb), next(ijb), next(ijb), score

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RefusedPairs):
            return self._ijb == other._ijb and self._score == other._score
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"RefusedPairs({len(self)} pairs)"


@dataclass
class NearDuplicates:
    """Near-duplicate groups of ``n`` images.

    Attributes:
        roots: Each image's group root: the smallest index of its group (itself when alone).
        joined: For each image in a group of two or more, the first confirmed pair it was in:
            ``index → (other index, hash distance, pixel similarity)``.
        refused: Proposed pairs the pixels refused: ``(i, j, hash distance, pixel similarity)``,
            in the order they were checked.
    """

    roots: list[int]
    joined: dict[int, tuple[int, int, float]] = field(default_factory=dict)
    refused: RefusedPairs = field(default_factory=RefusedPairs)


def find_near_duplicates(
    hashes: Sequence[str],
    max_bits: int,
    grey: Callable[[int], np.ndarray],
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    same: Callable[[int, int], bool] | None = None,
    scores: MutableMapping[str, float] | None = None,
    key: Callable[[int], str] | None = None,
    grids: Callable[[int], StoredGrid | None] | None = None,
    spill: Path | None = None,
) -> NearDuplicates:
    """Group images whose hashes are within ``max_bits`` bits *and* whose pixels agree.

    Args:
        hashes: One 64-bit hash (hex) per image.
        max_bits: Hamming distance at or below which a pair is proposed.
        grey: Loads image ``i`` as a grey array (called only for images in a proposed pair, once
            per image unless it is in a pair of different sizes and its thumbnail has left the
            256-entry cache).
        min_similarity: :func:`pixel_similarity` at or above which a proposed pair is confirmed.
        same: Says two images have identical pixels (confirmed without loading them).
        scores: Pixel similarities computed before, by ``"<key(i)>:<key(j)>"``; read and filled in,
            so a re-run loads no image of a pair it has scored (ingest keeps it between runs).
        key: The content key of image ``i`` (its pixel MD5) for ``scores``.
        grids: Image ``i``'s original ``(height, width)`` and :func:`stretched_grid`, when known
            without decoding (``None``: not known, ``grey`` loads it); a pair of same-size images
            with both grids known is scored without loading either.
        spill: The folder of the temporary file the grids are kept in while pairs are scored
            (32 kB per image in a pair; ``None``: the system's temporary folder).

    Returns:
        The groups (transitive over confirmed pairs; each rooted at its smallest index, so the
        grouping does not depend on the order pairs are checked in) and the refused pairs.
    """
    n = len(hashes)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    values = _as_uint64(hashes)
    out = NearDuplicates(roots=[])
    scorer = _Scorer(grey, min_similarity, scores, key, grids, spill)
    try:
        _walk(candidate_pairs(values, max_bits), values, scorer, same, find, parent, out)
    finally:
        scorer.pixels.grids.close()
    out.roots = [find(i) for i in range(n)]
    return out


def _walk(
    pairs: np.ndarray,
    values: np.ndarray,
    scorer: _Scorer,
    same: Callable[[int, int], bool] | None,
    find: Callable[[int], int],
    parent: list[int],
    out: NearDuplicates,
) -> None:
    """Score ``pairs`` (``k × 2``, in order) and join the confirmed ones into ``parent``'s groups.

    Pairs are scored a batch at a time (a batch skips pairs already joined when it starts), then
    walked in order, so the grouping is exactly that of checking one pair after the other. Only the
    batch is a Python list: ``pairs`` stays a NumPy array (16 bytes a pair, not ≈ 130).
    """
    min_similarity = scorer.min_similarity
    for start in range(0, len(pairs), _BATCH):
        batch: list[tuple[int, int]] = [(i, j) for i, j in pairs[start : start + _BATCH].tolist()]
        identical = {(i, j) for i, j in batch if same is not None and same(i, j)}
        scored = scorer.score([(i, j) for i, j in batch if find(i) != find(j) and (i, j) not in identical])
        for i, j in batch:
            if find(i) == find(j):
                continue  # already joined through other confirmed pairs
            bits = int(np.bitwise_count(values[i] ^ values[j]))
            score = 1.0 if (i, j) in identical else scored[(i, j)]
            if score < min_similarity:
                out.refused.append((i, j, bits, round(score, 4)))
                continue
            ri, rj = find(i), find(j)
            # Every member keeps the first confirmed pair it was in, so each can name its evidence.
            out.joined.setdefault(i, (j, bits, round(score, 4)))
            out.joined.setdefault(j, (i, bits, round(score, 4)))
            parent[max(ri, rj)] = min(ri, rj)
