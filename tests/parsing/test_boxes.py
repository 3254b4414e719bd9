from __future__ import annotations

import pytest

from scopebench.parsing.boxes import parse_boxes


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
        ('Found: {"x1": 30, "y1": 40, "x2": 10, "y2": 20} and {"x1": 1', [(10.0, 20.0, 30.0, 40.0)]),
    ],
)
def test_json_boxes(text: str, expected: list[tuple[float, ...]]) -> None:
    res = parse_boxes(text, 100, 200)
    assert res.format == "json"
    assert _xyxy(res) == expected


def test_no_boxes() -> None:
    assert parse_boxes("There are no nuclei in this image.", 10, 10).boxes == ()
    assert parse_boxes(None, 10, 10).format == "none"


def test_boxes_are_clipped_to_the_image() -> None:
    res = parse_boxes("[-5, -5, 500, 50]", 100, 100)
    assert _xyxy(res) == [(0.0, 0.0, 100.0, 50.0)]
