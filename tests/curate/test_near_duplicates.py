"""Near-duplicates: the hash index finds every close pair, the pixels decide which are the same image."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

from scopebench.curate.ingestion import near_duplicates
from scopebench.curate.ingestion.images import dhash, grey8
from scopebench.curate.ingestion.near_duplicates import (
    DEFAULT_MIN_SIMILARITY,
    candidate_pairs,
    find_near_duplicates,
    pixel_similarity,
    similarity,
    thumbnail,
)
from scopebench.testing.near_duplicate_set import EDITS, labelled_set, smooth_field


def _brute(values: np.ndarray, r: int) -> set[tuple[int, int]]:
    return {
        (i, j)
        for i, j in itertools.combinations(range(len(values)), 2)
        if int(values[i] ^ values[j]).bit_count() <= r
    }


@pytest.mark.parametrize("r", [0, 1, 3, 6, 9, 20])
def test_candidate_pairs_are_exactly_the_pairs_within_r_bits(r: int) -> None:
    """Catches a block index that misses pairs (wrong block masks, a pigeonhole off by one, runs of
    equal keys longer than two) or reports pairs beyond ``r`` bits; r = 20 takes the all-pairs path."""
    rng = np.random.default_rng(r)
    base = rng.integers(0, 2**63, 60, dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, 60, dtype=np.uint64
    )
    planted = []
    for k in range(40):  # copies of base hashes with 0..r+2 bits flipped, some sharing one base
        flips = rng.choice(64, size=int(rng.integers(0, r + 3)), replace=False)
        planted.append(base[k % 7] ^ np.uint64(sum(1 << int(f) for f in flips)))
    values = np.concatenate([base, np.array(planted, dtype=np.uint64)])
    found = {tuple(p) for p in candidate_pairs(values, r).tolist()}
    assert found == _brute(values, r)
    assert len(found) > 0
    as_hex = [f"{int(v):016x}" for v in values]
    assert np.array_equal(candidate_pairs(as_hex, r), candidate_pairs(values, r))


def test_each_edit_is_confirmed_and_look_alikes_are_refused() -> None:
    """Catches a pixel check too strict for the edits a collection picks up (JPEG, 16-bit, rescale,
    crop, contrast) or too lenient for distinct fields that share their background and stain."""
    images = labelled_set(1, 2, seed=3, size=192)
    grey = {im.name: grey8(im.pixels) for im in images}
    for field in (0, 1):
        for edit in EDITS:
            score = pixel_similarity(grey[f"f0_{field}_orig"], grey[f"f0_{field}_{edit}"])
            assert score >= DEFAULT_MIN_SIMILARITY, (field, edit, score)
    look = itertools.product(
        ("f0_0_orig", "f0_0_jpeg", "f0_0_crop"), ("f0_1_orig", "f0_1_contrast", "f0_1_rescale")
    )
    for a, b in look:
        assert pixel_similarity(grey[a], grey[b]) < DEFAULT_MIN_SIMILARITY, (a, b)


def test_groups_on_a_labelled_set_are_exactly_the_fields() -> None:
    """Catches grouping by hash alone (the look-alikes of a family are proposed: their hashes are
    close) and a grouping that does not follow confirmed pairs transitively (a crop and a rescale of
    one field only meet through the original)."""
    images = labelled_set(2, 2, seed=1, size=160)
    hashes = [dhash(im.pixels) for im in images]
    found = find_near_duplicates(hashes, 12, lambda i: grey8(images[i].pixels))
    groups: dict[int, set[tuple[int, int]]] = {}
    for im, root in zip(images, found.roots, strict=True):
        groups.setdefault(root, set()).add((im.family, im.field))
    assert sorted(groups.values(), key=sorted) == [{(0, 0)}, {(0, 1)}, {(1, 0)}, {(1, 1)}]
    assert [found.roots.count(r) for r in sorted(groups)] == [1 + len(EDITS)] * 4
    refused_lookalikes = [
        (i, j)
        for i, j, _, _ in found.refused
        if images[i].family == images[j].family and images[i].field != images[j].field
    ]
    assert refused_lookalikes  # the hash proposed look-alikes; only the pixels kept them apart


def test_hash_colliding_smooth_fields_are_each_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches confirmation that decodes an image once per pair (the second image of each pair
    missing a thumbnail cache smaller than the collection: quadratic decodes on smooth fields whose
    hashes all collide), and batched scoring that loses the one real near-duplicate among them."""
    monkeypatch.setattr(near_duplicates, "_THUMBNAILS", 4)  # a collection larger than the cache
    greys = [smooth_field(5, i, 96) for i in range(40)]
    rng = np.random.default_rng(5)
    noisy = np.clip(greys[7] + rng.normal(0, 2, greys[7].shape), 0, 255).astype(np.uint8)
    greys.append(noisy)  # a re-encoding-like copy of image 7: the one true pair
    loads: list[int] = []
    found = find_near_duplicates(
        ["0" * 16] * len(greys), 64, lambda i: loads.append(i) or greys[i]
    )  # 64 bits: every pair is proposed
    assert sorted(loads) == list(range(len(greys)))  # each image decoded exactly once
    assert found.roots == [7 if i == 40 else i for i in range(len(greys))]
    assert len(found.refused) == len(greys) * (len(greys) - 1) // 2 - 1
    assert all(score < DEFAULT_MIN_SIMILARITY for _, _, _, score in found.refused)


def test_batched_scores_are_those_of_one_pair_at_a_time() -> None:
    """Catches batched SSIM arithmetic that drifts from skimage's (a filter running across the
    stack of pairs, population instead of sample covariance, blocks split differently): a drift
    would confirm or refuse pairs other than the one-pair-at-a-time check does."""
    images = labelled_set(2, 3, seed=2, size=160)
    thumbs = [thumbnail(grey8(im.pixels)) for im in images]
    pairs = [
        (i, j) for i, j in itertools.combinations(range(len(images)), 2) if thumbs[i].shape == thumbs[j].shape
    ]
    grids = [near_duplicates._stretched(near_duplicates._grid(t)) for t in thumbs]
    a, b = np.stack([grids[i] for i, _ in pairs]), np.stack([grids[j] for _, j in pairs])
    batched = near_duplicates._batch_block_ssim(
        a, b, (*near_duplicates._ssim_terms(a), *near_duplicates._ssim_terms(b))
    )
    one_by_one = [similarity(thumbs[i], thumbs[j]) for i, j in pairs]
    assert len(pairs) > 100
    assert np.abs(batched - np.array(one_by_one)).max() < 1e-6
    assert (batched >= DEFAULT_MIN_SIMILARITY).sum() >= 6 * 6  # true same-size pairs are among them


def test_grouping_does_not_depend_on_the_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches a batch walk that differs from checking one pair after the other (a pair joined by
    an earlier pair of its own batch still refused or re-joined, evidence taken from a later pair)."""
    images = labelled_set(2, 2, seed=4, size=128)
    hashes = [dhash(im.pixels) for im in images]
    greys = [grey8(im.pixels) for im in images]
    monkeypatch.setattr(near_duplicates, "_BATCH", 1)
    single = find_near_duplicates(hashes, 12, lambda i: greys[i])
    monkeypatch.setattr(near_duplicates, "_BATCH", 7)
    batched = find_near_duplicates(hashes, 12, lambda i: greys[i])
    assert batched == single
    assert single.joined and single.refused


def test_rerun_with_remembered_scores_loads_nothing() -> None:
    """Catches batched scoring that loads the images of pairs it has remembered (a re-run of a
    large collection would decode every image again)."""
    greys = [smooth_field(9, i, 64) for i in range(12)]
    greys.append(greys[3].copy())
    scores: dict[str, float] = {}
    first = find_near_duplicates(["0" * 16] * 13, 64, lambda i: greys[i], scores=scores, key=str)
    assert len(scores) == 13 * 12 // 2  # every pair scored once: no pair was joined through others

    def no_load(i: int) -> np.ndarray:
        raise AssertionError(f"image {i} loaded on a re-run")

    again = find_near_duplicates(["0" * 16] * 13, 64, no_load, scores=scores, key=str)
    assert again == first
    assert first.roots[12] == 3


def _peak_bytes(n: int) -> int:
    """The traced peak of grouping ``n`` same-size images whose hashes all collide (every pair
    proposed, every pair refused), their grids given as fresh copies, as a store's reads are."""
    rng = np.random.default_rng(11)
    grids = [rng.random((near_duplicates.GRID_SIDE, near_duplicates.GRID_SIDE)) for _ in range(n)]

    def no_load(i: int) -> np.ndarray:
        raise AssertionError(f"image {i} decoded although its grid was given")

    tracemalloc.start()
    try:
        found = find_near_duplicates(["0" * 16] * n, 64, no_load, grids=lambda i: ((96, 96), grids[i].copy()))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(found.refused) == n * (n - 1) // 2  # noise against noise: nothing confirmed
    return peak


def test_memory_held_while_scoring_does_not_grow_with_the_images_in_pairs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Catches a stage that keeps every grid it has read (32 kB per image in a pair: 640 MB at
    20,000 images whose hashes all collide), or the pairs and refused pairs as Python objects
    (≈ 130 and 170 bytes a pair). Tripling the images (ten times the pairs) may add only the
    packed pairs (48 bytes each) and per-image sizes; keeping the 80 extra grids adds 2.6 MB."""
    monkeypatch.setattr(near_duplicates, "_BATCH", 8)  # a batch's working set far below the grids
    small, large = _peak_bytes(40), _peak_bytes(120)
    extra_pairs = 120 * 119 // 2 - 40 * 39 // 2
    assert large - small < extra_pairs * 48 + 120 * 1024, (small, large)


def test_folding_repeats_in_the_index_finds_the_same_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches folding (which bounds the index's memory when every table finds the same close
    pairs) that drops the pairs of the last tables or keeps a pair twice: the same rows whether
    repeats are folded after every table or never."""
    rng = np.random.default_rng(8)
    base = rng.integers(0, 2**63, size=3, dtype=np.uint64)
    flips = [sum(1 << int(f) for f in rng.choice(64, size=3, replace=False)) for _ in range(120)]
    values = np.array([base[k % 3] ^ np.uint64(f) for k, f in enumerate(flips)], dtype=np.uint64)
    unfolded = candidate_pairs(values, 6)
    monkeypatch.setattr(near_duplicates, "_FOLD", 0)
    folded = candidate_pairs(values, 6)
    assert np.array_equal(folded, unfolded)
    assert len(unfolded) > 1000 and {tuple(p) for p in folded.tolist()} == _brute(values, 6)
