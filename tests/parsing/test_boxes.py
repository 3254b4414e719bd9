from __future__ import annotations

import pytest

from scopebench.parsing.boxes import _nesting_depth, parse_boxes


def _xyxy(res):  # type: ignore[no-untyped-def]
    return [(round(b.x1, 2), round(b.y1, 2), round(b.x2, 2), round(b.y2, 2)) for b in res.boxes]


def test_qwen_box_on_1000_grid() -> None:
    res = parse_boxes("<ref>nucleus</ref><box>(100,200),(500,600)</box>", 200, 100)
    assert res.format == "qwen"
    assert _xyxy(res) == [(20.0, 20.0, 100.0, 60.0)]
    assert res.boxes[0].label == "nucleus"


def test_qwen_several_boxes_with_spaces_and_truncation() -> None:
    text = "<box>( 0 , 0 ),( 1000 , 1000 )</box> and <box>(10,10),(20,20)</box><box>(5,5),(9"
    res = parse_boxes(text, 100, 100, label="cell")
    assert _xyxy(res) == [(0.0, 0.0, 100.0, 100.0), (1.0, 1.0, 2.0, 2.0)]
    assert res.dropped == 1 and res.boxes[1].label == "cell"


def test_qwen2_box_tokens() -> None:
    res = parse_boxes(
        "<|object_ref_start|>cell<|object_ref_end|><|box_start|>(250,250),(750,750)<|box_end|>", 400, 400
    )
    assert _xyxy(res) == [(100.0, 100.0, 300.0, 300.0)]


def test_paligemma_loc_tokens_y_first_on_1024_grid() -> None:
    res = parse_boxes("<loc0256><loc0512><loc0768><loc1024> nucleus ; <loc0000><loc0000><loc0512>", 1024, 512)
    assert res.format == "paligemma"
    # y_min=256/1024*512=128, x_min=512, y_max=384, x_max=1024
    assert _xyxy(res) == [(512.0, 128.0, 1024.0, 384.0)]
    assert res.boxes[0].label == "nucleus" and res.dropped == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"x1": 10, "y1": 20, "x2": 30, "y2": 40}', [(10.0, 20.0, 30.0, 40.0)]),
        ("[10, 20, 30, 40]", [(10.0, 20.0, 30.0, 40.0)]),
        ("[0.1, 0.2, 0.3, 0.4]", [(10.0, 40.0, 30.0, 80.0)]),  # normalised × (100, 200)
        (
            '```json\n[{"bbox_2d": [1, 2, 3, 4], "label": "cell"}, {"bbox_2d": [5, 6, 7, 8]}]\n```',
            [(1.0, 2.0, 3.0, 4.0), (5.0, 6.0, 7.0, 8.0)],
        ),
        # Truncated JSON: the complete object is read as written (corners reversed), the rest dropped.
        ('Found: {"x1": 30, "y1": 40, "x2": 10, "y2": 20} and {"x1": 1', [(30.0, 40.0, 10.0, 20.0)]),
    ],
)
def test_json_boxes(text: str, expected: list[tuple[float, ...]]) -> None:
    res = parse_boxes(text, 100, 200)
    assert res.format == "json"
    assert _xyxy(res) == expected


def test_no_boxes() -> None:
    assert parse_boxes("There are no nuclei in this image.", 10, 10).boxes == ()
    assert parse_boxes(None, 10, 10).format == "none"


# --- Boxes are scored as written; repairs only when asked -----------------------


def test_box_outside_the_image_is_kept_as_written_by_default() -> None:
    # The official loc_metric never clips: clipping [-5,-5,500,50] to [0,0,100,50] would raise its
    # IoU with a [0,0,100,50] truth from 5000/(50500+... ) to 1.
    res = parse_boxes("[-5, -5, 500, 50]", 100, 100)
    assert _xyxy(res) == [(-5.0, -5.0, 500.0, 50.0)]
    assert res.irregular == 1 and res.repaired == 0


def test_reversed_corners_are_kept_as_written_by_default() -> None:
    # Qwen grid (800,600)-(200,100) on 100×100 → x1=80 > x2=20: kept, so GRIT gives it area 0.
    res = parse_boxes("<box>(800,600),(200,100)</box>", 100, 100)
    assert _xyxy(res) == [(80.0, 60.0, 20.0, 10.0)]
    assert res.irregular == 1 and res.repaired == 0
    # PaliGemma y_min > y_max: kept too.
    pali = parse_boxes("<loc0512><loc0000><loc0256><loc1024> cell", 1024, 1024)
    assert _xyxy(pali) == [(0.0, 512.0, 1024.0, 256.0)] and pali.irregular == 1


def test_repair_swaps_and_clips_and_counts() -> None:
    text = "[[-5, -5, 500, 50], [30, 40, 10, 20], [1, 2, 3, 4]]"
    res = parse_boxes(text, 100, 100, repair=True)
    assert _xyxy(res) == [(0.0, 0.0, 100.0, 50.0), (10.0, 20.0, 30.0, 40.0), (1.0, 2.0, 3.0, 4.0)]
    assert res.repaired == 2 and res.irregular == 2
    plain = parse_boxes(text, 100, 100)
    assert plain.repaired == 0 and plain.irregular == 2
    assert _xyxy(plain)[1] == (30.0, 40.0, 10.0, 20.0)


def test_regular_boxes_are_not_irregular() -> None:
    # Edges exactly on the image border are inside.
    res = parse_boxes("<box>(0,0),(1000,1000)</box>", 100, 100, repair=True)
    assert res.irregular == 0 and res.repaired == 0


def test_non_finite_coordinates_are_dropped_and_counted() -> None:
    res = parse_boxes(
        '[[1e999, 0, 10, 10], [0, 0, 10, 10], {"x1": NaN, "y1": 0, "x2": 1, "y2": 1}]', 100, 100
    )
    assert _xyxy(res) == [(0.0, 0.0, 10.0, 10.0)] and res.dropped == 2


def test_number_of_boxes_read_is_capped_and_the_rest_counted() -> None:
    text = "".join(f"<box>({i % 900},{i % 900}),({i % 900 + 10},{i % 900 + 10})</box>" for i in range(1500))
    res = parse_boxes(text, 1000, 1000)
    assert len(res.boxes) == 1000 and res.truncated == 500
    small = parse_boxes("[[0,0,1,1],[0,0,2,2],[0,0,3,3]]", 10, 10, max_boxes=2)
    assert len(small.boxes) == 2 and small.truncated == 1


# --- Untrusted replies cannot crash or stall a run --------------------------------

_DEEP = [3_000, 100_000]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("depth", _DEEP)
@pytest.mark.parametrize(
    "shape",
    [
        lambda n: "[" * n + "]" * n,  # raised RecursionError in json.loads
        lambda n: "[" * n,  # unclosed
        lambda n: '{"a": ' * n + "1" + "}" * n,  # nested objects
        lambda n: "```json\n" + "[" * n + "]" * n + "\n```",  # in a fence
        lambda n: "<box>(" * n,  # Qwen openings, never closed
        lambda n: "<ref>" * n + "<box>(1,2),(3,4)</box>",  # unclosed refs (was quadratic)
        lambda n: "<loc0001>" * n,  # PaliGemma tokens with no label
    ],
)
def test_deeply_nested_or_huge_replies_parse_without_error(depth: int, shape) -> None:  # type: ignore[no-untyped-def]
    res = parse_boxes(shape(depth), 100, 100)
    assert res.format in {"none", "json", "qwen", "paligemma"}
    assert len(res.boxes) <= 1000


@pytest.mark.timeout(10)
def test_box_inside_deep_nesting_is_still_found() -> None:
    res = parse_boxes("[" * 3_000 + "[10, 20, 30, 40]" + "]" * 3_000, 100, 100)
    assert res.format == "json" and _xyxy(res) == [(10.0, 20.0, 30.0, 40.0)]


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "text",
    [
        "[" * 150_000 + "]" * 150_000,
        "[{" * 150_000,
        "[1, 2, 3, 4], " * 21_500,
        "<box>(1,2),(3,4)</box>" * 13_700,
        "<loc0001><loc0002><loc0003><loc0004> c ; " * 7_500,
    ],
)
def test_300k_character_replies_parse_in_linear_time(text: str) -> None:
    # 0.02–0.11 CPU s each when measured alone (bench/bench_parser.py); a quadratic parser takes
    # minutes on 300k characters, so the 10 s timeout above trips only on such a regression, never
    # on a loaded machine (an assert on the elapsed time did: 1.37 CPU s under a load of 4).
    assert len(text) >= 300_000
    res = parse_boxes(text, 100, 100)
    assert len(res.boxes) <= 1000


@pytest.mark.parametrize("value", ["true", '"30"', "null"])
def test_a_box_list_with_a_non_number_is_no_box(value: str) -> None:
    # JSON true is a Python bool (an int subclass) and "30" a string: neither is a coordinate, so
    # the list is not a box at all (never guessed as 1.0 or 30.0).
    res = parse_boxes(f'[{{"bbox": [10, 20, {value}, 40]}}, [50, 60, 70, 80]]', 100, 200)
    assert _xyxy(res) == [(50.0, 60.0, 70.0, 80.0)]


def test_a_bare_list_with_a_non_number_is_no_box() -> None:
    res = parse_boxes('[[10, 20, "x", 40], [50, 60, 70, 80]]', 100, 200)
    assert _xyxy(res) == [(50.0, 60.0, 70.0, 80.0)]


def test_json_labels_come_from_label_then_class_then_the_default() -> None:
    text = (
        '[{"bbox": [1, 2, 3, 4], "label": "nucleus", "class": "cell"}, {"bbox": [5, 6, 7, 8], "class": "gland"},'
        ' {"bbox": [9, 10, 11, 12]}, {"bbox": [13, 14, 15, 16], "label": ""}, [17, 18, 19, 20]]'
    )
    res = parse_boxes(text, 100, 200, label="cell")
    assert [b.label for b in res.boxes] == ["nucleus", "gland", "cell", "cell", "cell"]


@pytest.mark.parametrize(
    ("chunk", "depth"),
    [
        ("[[]]", 2),
        ("{}", 1),
        ("no json", 0),
        ('["[[[["]', 1),  # brackets inside a JSON string do not nest
        ('["a\\"[[", []]', 2),  # an escaped quote does not end the string
        ('["\\\\", []]', 2),  # an escaped backslash does not escape the closing quote
        ("]][[", 2),  # stray closers never go below 0
        ("[X, [1]]", 2),  # only brackets and braces open a level
        ("[[][[]]]", 3),  # each closer goes back one level
    ],
)
def test_nesting_depth_counts_brackets_outside_strings(chunk: str, depth: int) -> None:
    # The depth decides whether a reply is handed to json.loads (MAX_JSON_DEPTH) or read flat.
    assert _nesting_depth(chunk) == depth


_NESTED_BOX = '{"x1": 1, "y1": 2, "x2": 3, "y2": 4, "meta": {"score": 0.9}}'  # only json.loads reads it


@pytest.mark.parametrize(
    "text",
    [
        _NESTED_BOX,
        "```\nsee below\n```\n```json\n" + _NESTED_BOX + "\n```",  # a fence that is no JSON first
        "```json\n{broken\n```\n```json\n" + _NESTED_BOX + "\n```",  # a fence that fails to parse first
        "[" * 30 + _NESTED_BOX + "]" * 30,  # nesting 32 = MAX_JSON_DEPTH: still parsed whole
    ],
)
def test_a_box_with_nested_fields_is_read_by_the_json_parser(text: str) -> None:
    assert _xyxy(parse_boxes(text, 100, 200)) == [(1.0, 2.0, 3.0, 4.0)]


def test_a_json_string_is_not_a_box_container_but_its_text_is_scanned() -> None:
    # The reply is one JSON string: no structure to walk, so the flat scan finds the list in it.
    assert _xyxy(parse_boxes('"[10, 20, 30, 40]"', 100, 200)) == [(10.0, 20.0, 30.0, 40.0)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[0, 0.2, 0.5, 1]", (0.0, 40.0, 50.0, 200.0)),  # 0 and 1 are within [0, 1]: normalised
        ("[0, 0, 2, 2]", (0.0, 0.0, 2.0, 2.0)),  # a 2-pixel box, not a normalised one
    ],
)
def test_normalised_means_every_value_within_zero_and_one(text: str, expected: tuple[float, ...]) -> None:
    assert _xyxy(parse_boxes(text, 100, 200)) == [expected]


def test_repair_clips_a_box_beyond_the_left_or_top_edge_to_zero_width_or_height() -> None:
    res = parse_boxes("[[-20, 5, -10, 8], [5, -20, 8, -10]]", 100, 200, repair=True)
    assert _xyxy(res) == [(0.0, 5.0, 0.0, 8.0), (5.0, 0.0, 8.0, 0.0)]
    assert res.repaired == 2


def test_complete_replies_drop_nothing_and_partial_groups_are_counted_per_segment() -> None:
    assert parse_boxes("<box>(100,200),(500,600)</box>", 100, 100).dropped == 0
    two = parse_boxes(
        "<loc0000><loc0000><loc0512><loc0512><loc0512><loc0512><loc1024><loc1024> cell", 1024, 1024
    )
    assert _xyxy(two) == [(0.0, 0.0, 512.0, 512.0), (512.0, 512.0, 1024.0, 1024.0)] and two.dropped == 0
    partial = parse_boxes("<loc0001><loc0002> a ; <loc0003> b", 1024, 1024)
    assert (partial.boxes, partial.dropped) == ((), 2)


def test_a_box_without_any_label_has_the_empty_label() -> None:
    assert [b.label for b in parse_boxes("[1, 2, 3, 4]", 10, 10).boxes] == [""]


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("qwen", "<box>(100,200),(500,600)</box>"),
        ("paligemma", "<loc0200><loc0100><loc0600><loc0500>"),
        ("json", "[10, 20, 50, 60]"),
    ],
)
def test_a_forced_format_reads_only_that_format(fmt: str, text: str) -> None:
    assert parse_boxes(text, 100, 100, fmt=fmt).format == fmt  # type: ignore[arg-type]
    other = "json" if fmt != "json" else "qwen"
    assert parse_boxes(text, 100, 100, fmt=other) == parse_boxes(None, 100, 100)  # type: ignore[arg-type]
    assert parse_boxes(None, 100, 100).boxes == ()


def test_a_zero_width_or_height_box_is_not_reversed() -> None:
    # Degenerate (area 0, IoU 0 with everything) but written in order: not irregular.
    res = parse_boxes("[[10, 20, 10, 40], [10, 20, 30, 20]]", 100, 100)
    assert (len(res.boxes), res.irregular) == (2, 0)


def test_box_keys_keep_their_labels() -> None:
    # Qwen2.5-VL writes {"bbox_2d": [...], "label": ...}; others "bbox" or "box". Each key is read
    # with the object's label (a bare 4-number list inside would be read without it).
    text = (
        '[{"bbox_2d": [1, 2, 3, 4], "label": "cell"}, {"bbox": [5, 6, 7, 8], "label": "gland"},'
        ' {"box": [9, 10, 11, 12], "label": "nucleus"}]'
    )
    res = parse_boxes(text, 100, 200)
    assert [(b.label, b.x1) for b in res.boxes] == [("cell", 1.0), ("gland", 5.0), ("nucleus", 9.0)]


def test_unreadable_flat_object_does_not_stop_the_fallback() -> None:
    # Truncated output with an object that is not JSON (unquoted keys) before a complete one: the
    # complete one is still read.
    res = parse_boxes('Found: {x1: 0} and {"x1": 0, "y1": 0, "x2": 100, "y2": 50} and {"x1"', 100, 200)
    assert res.format == "json" and _xyxy(res) == [(0.0, 0.0, 100.0, 50.0)]


@pytest.mark.parametrize(
    ("text", "irregular"),
    [
        ("[10, 20, 120, 40]", 1),  # past the right edge only (width 100)
        ("[10, 20, 30, 240]", 1),  # past the bottom only (height 200)
        ("[10, 20, 30, 40]", 0),
    ],
)
def test_a_box_past_one_edge_is_irregular(text: str, irregular: int) -> None:
    res = parse_boxes(text, 100, 200)
    assert (res.irregular, res.repaired, len(res.boxes)) == (irregular, 0, 1)
