"""``--bench hf`` and ``local`` on Hugging Face datasets written by the real ``datasets`` library.

Three layouts (MMMU's, MicroVQA's, a plain image/question/choices/answer one) in three forms (a
Hub repository's parquet layout, a ``save_to_disk`` folder, one parquet file), plus a Hub id
read offline from the ``datasets`` cache and images behind URLs.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hf_fixtures as fx
import pytest

from scopebench.benchmarks import get_benchmark
from scopebench.benchmarks.hf import read_spec
from scopebench.cli import main
from scopebench.errors import DataFormatError, DataNotFoundError, ImageLoadError
from scopebench.protocols import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "hf-datasets.md"


@pytest.fixture(scope="module", autouse=True)
def _hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep the parquet → Arrow cache and URL downloads out of the user's home."""
    import datasets

    cache = tmp_path_factory.mktemp("hf-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", str(cache))
        mp.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", str(cache / "downloads"))
        yield


@pytest.fixture(scope="module")
def mmmu_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MMMU's Hub repository layout: one folder per subject, ``<split>-0000i-of-0000n.parquet``."""
    root = tmp_path_factory.mktemp("mmmu")
    (root / "Art").mkdir()
    fx.mmmu_dataset().to_parquet(str(root / "Art" / "validation-00000-of-00001.parquet"))
    return root


MMMU_YAML = """\
dataset: mmmu
subset: Art
split: validation
options: options
answer: answer
template: "{{ question }}\\n{{ options_block }}\\nAnswer with the option's letter from the given choices directly."
"""


def test_mmmu_layout_from_yaml(mmmu_repo: Path) -> None:
    """MMMU: options as a list in a string, letter answers, image_1…image_7 mostly empty.

    Catches: image columns after the first dropped, null image cells turned into broken
    references, open questions silently scored, and an answer letter beyond the options guessed.
    """
    (mmmu_repo / "mmmu.yaml").write_text(MMMU_YAML.replace("dataset: mmmu", "dataset: ."))
    loaded = get_benchmark("hf").load(mmmu_repo / "mmmu.yaml")
    by_id = {it.id: it for it in loaded.items}
    assert list(by_id) == ["hf/validation_Art_1", "hf/validation_Art_2"]
    first, second = by_id["hf/validation_Art_1"], by_id["hf/validation_Art_2"]
    assert first.choices == ("Baroque", "Cubism", "Rococo", "Impressionism")
    assert (first.answer_index, second.answer_index) == (1, 3)
    assert first.split == "validation" and first.subset == "Art"
    assert [ref.load().size for ref in first.images] == [(11, 7)]
    assert [ref.load().size for ref in second.images] == [(9, 5), (6, 4)]
    assert first.metadata["question_type"] == "multiple-choice"
    errors = {p.record: p for p in loaded.problems}
    assert "column 'options'" in errors["row 2 (id 'validation_Art_3')"].message
    assert "column 'answer'" in errors["row 3 (id 'validation_Art_4')"].message
    # The template is the owner protocol; the answer column never reaches the prompt.
    request = render(first, "owner")
    assert request.text == (
        "<image 1> Which style is shown in work 1?\nA. Baroque\nB. Cubism\nC. Rococo\nD. Impressionism\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert request.protocol == "hf-owner"


def test_template_cannot_read_the_answer(mmmu_repo: Path) -> None:
    """Catches a template that leaks the answer column into the prompt."""
    with pytest.raises(DataFormatError, match=r"answer.*undefined|undefined.*answer"):
        get_benchmark("hf").load(f"{mmmu_repo}?subset=Art&template=The answer is {{{{ answer }}}}")


def test_microvqa_layout_from_a_saved_folder(tmp_path: Path) -> None:
    """MicroVQA: a list of images per row, an integer answer index, ids in key_question.

    Catches: list image columns read as one image, the bad index 4 of a 4-option row guessed,
    and image bytes printed in problem messages.
    """
    folder = fx.write_saved(fx.microvqa_dataset(), tmp_path / "mvqa")
    spec = f"{folder}?id=key_question&answer=correct_index&images=images_list&task=task_str"
    loaded = get_benchmark("hf").load(spec)
    by_id = {it.id: it for it in loaded.items}
    assert "hf/503" not in by_id
    assert [ref.load().size for ref in by_id["hf/501"].images] == [(20, 10), (12, 14), (30, 8)]
    assert by_id["hf/501"].answer_index == 2 and by_id["hf/501"].task == "hypothesis_generation"
    assert by_id["hf/504"].images == ()
    (bad,) = [p for p in loaded.problems if "503" in p.record]
    assert bad.record == "row 3 (id '503')" and "column 'correct_index'" in bad.message
    assert all("\\x89PNG" not in p.message and "bytes" not in p.message for p in loaded.problems)


def _plain(answers: list[Any]) -> Any:
    from datasets import Dataset, Features, Image, List, Value

    feats = Features({"image": Image(), "question": Value("string"), "choices": List(Value("string")),
                      "answer": Value("string")})  # fmt: skip
    rows = {
        "image": [fx.image_cell(4 + i, 3) for i in range(len(answers))],
        "question": [f"What is shown in image {i}?" for i in range(len(answers))],
        "choices": [["nucleus", "mitochondrion", "golgi"]] * len(answers),
        "answer": answers,
    }
    return Dataset.from_dict(rows, features=feats)


@pytest.mark.parametrize("bench", ["hf", "local"])
def test_plain_layout_in_one_parquet_file(bench: str, tmp_path: Path) -> None:
    """The plain layout as one parquet file with embedded images, answers as index, letter and text.

    Catches ``local`` refusing embedded images row by row (and printing their bytes), and an
    answer read in the wrong form.
    """
    file = tmp_path / "data.parquet"
    _plain(["0", "C", "mitochondrion", "Z"]).to_parquet(str(file))
    loaded = get_benchmark(bench).load(file)
    assert [it.answer_index for it in loaded.items] == [0, 2, 1]
    assert [it.images[0].load().size for it in loaded.items] == [(4, 3), (5, 3), (6, 3)]
    (problem,) = loaded.problems
    assert "'Z'" in problem.message and "row 3" in problem.record + problem.message


def test_undecodable_image_names_row_and_column(tmp_path: Path) -> None:
    """Catches an error that prints the cell's bytes instead of where the image is."""
    from datasets import Dataset, Features, Value

    feats = Features({"image": Value("binary"), "question": Value("string"),
                      "choices": fx.microvqa_features()["choices"], "answer": Value("int64")})  # fmt: skip
    garbage = b"\x89PNG not really" * 50
    Dataset.from_dict({"image": [garbage], "question": ["q?"], "choices": [["a", "b"]], "answer": [1]},
                      features=feats).save_to_disk(str(tmp_path / "saved"))  # fmt: skip
    (item,) = get_benchmark("hf").load(tmp_path / "saved").items
    with pytest.raises(ImageLoadError) as err:
        item.images[0].load()
    assert "hf:0:image" in str(err.value) and "not really" not in str(err.value)


def test_mapping_errors_name_the_column(tmp_path: Path) -> None:
    """Catches a mapped column that does not exist being ignored (and the wrong column guessed)."""
    folder = fx.write_saved(_plain(["0", "1"]), tmp_path / "plain")
    with pytest.raises(DataFormatError, match=r"question='Question' names no column.*image, question"):
        get_benchmark("hf").load(f"{folder}?question=Question")
    with pytest.raises(DataFormatError, match="unknown_key"):
        read_spec(f"{folder}?unknown_key=1")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_url_images_are_read_through_the_cache(tmp_path: Path) -> None:
    """Images behind URLs are fetched once into the datasets cache and read from it afterwards.

    Catches URL cells refused as unsafe paths, and a second read that needs the server again.
    """
    from datasets import Dataset

    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "cell.png").write_bytes(fx.png(13, 9))
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path / "www"))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/cell.png"
    Dataset.from_dict({"image": [url], "question": ["q?"], "choices": [["a", "b"]], "answer": ["b"]}
                      ).save_to_disk(str(tmp_path / "saved"))  # fmt: skip
    (item,) = get_benchmark("hf").load(tmp_path / "saved").items
    try:
        assert item.images[0].load().size == (13, 9)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert item.images[0].load().size == (13, 9)  # from the cache: the server is gone


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("hub") / "datasets"
    fx.write_hub_cache(_plain(["1", "golgi"]), cache, "lab/organelles", split="test")
    return cache


@pytest.fixture
def offline(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """In process, what ``HF_HUB_OFFLINE=1`` and ``HF_DATASETS_CACHE`` set when the libraries load."""
    import datasets
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(hub_cache))
    return hub_cache


@pytest.mark.parametrize("bench", ["hf", "local"])
def test_hub_id_offline_from_the_datasets_cache(bench: str, offline: Path) -> None:
    """A Hub id that ``datasets`` cached loads offline. Catches ``local`` refusing Hub ids."""
    loaded = get_benchmark(bench).load("lab/organelles")
    assert [(it.id, it.answer_index) for it in loaded.items] == [(f"{bench}/0", 1), (f"{bench}/1", 2)]
    assert loaded.items[1].images[0].load().size == (5, 3)


def test_hub_id_offline_not_cached_says_so(offline: Path) -> None:
    """Catches an offline miss reported as a network failure, without the way out."""
    with pytest.raises(DataNotFoundError, match="HF_HUB_OFFLINE is set and 'lab/not-cached' is not in the"):
        get_benchmark("hf").load("lab/not-cached")
    # For `local`, the same words are also a mistyped folder: the message says that first.
    with pytest.raises(
        DataNotFoundError, match=r"^local benchmark data not found: lab/not-cached is no file"
    ):
        get_benchmark("local").load("lab/not-cached")


def test_hugging_face_warnings_print_once(hub_cache: Path) -> None:
    """The CLI with ``HF_HUB_OFFLINE=1``: the cache warning of ``datasets`` shows once.

    Catches each Hugging Face warning printed twice (the library's own handler and ours).
    """
    # Without the verbosity an earlier in-process `-q` leaves in os.environ (it silences datasets).
    env = {k: v for k, v in os.environ.items() if k != "DATASETS_VERBOSITY"}
    env |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(hub_cache)}
    argv = [sys.executable, "-m", "scopebench", "validate", "hf", "--data", "lab/organelles"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "hf: 2 items" in proc.stdout
    assert proc.stderr.count("Using the latest cached version of the dataset") == 1


def test_docs_examples_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/hf-datasets.md: its YAML and every command of its bash blocks, offline against a cached
    MMMU Art subset and a saved MicroVQA copy.

    Catches examples that drift from the code (a renamed key, a column guess that no longer holds).
    """
    import datasets
    from huggingface_hub import constants

    doc = DOC.read_text(encoding="utf-8")
    yaml_block = re.search(r"```yaml\n# file: (\S+)\n(.*?)```", doc, re.S)
    assert yaml_block is not None
    (tmp_path / yaml_block[1]).write_text(yaml_block[2], encoding="utf-8")
    cache = tmp_path / "cache"
    fx.write_hub_cache(fx.mmmu_dataset(), cache, "MMMU/MMMU", split="validation", config="Art")
    fx.write_saved(fx.microvqa_dataset(), tmp_path / "microvqa-copy")
    commands = [
        line
        for block in re.findall(r"```bash\n(.*?)```", doc, re.S)
        for line in block.splitlines()
        if line.startswith("scopebench ")
    ]
    assert len(commands) == 5
    # In process (a subprocess per command costs seconds of imports): what HF_HUB_OFFLINE=1 and
    # HF_DATASETS_CACHE set when the libraries are imported.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    for command in commands:
        # validate exits 1 when rows were skipped (MMMU's open question, MicroVQA's bad index).
        assert main(shlex.split(command)[1:]) in (0, 1), command
    run = json.loads((tmp_path / "runs" / "mmmu-art-owner" / "run.json").read_text(encoding="utf-8"))
    assert (run["protocol"], run["n_items"]) == ("owner", 2)


def test_mmbench_layout_lettered_columns_and_base64_images(tmp_path: Path) -> None:
    """VLMEvalKit's MMBench layout: index, question, hint, options in columns A–D, a letter answer,
    images as base64 text.

    Catches lettered option columns not found, base64 cells read as (missing) paths, long cells
    printed whole in problems, and an empty trailing option kept.
    """
    import base64

    import pandas as pd

    rows = [
        {"index": 10, "question": "Which stain?", "hint": "A liver section.", "A": "H&E", "B": "PAS",
         "C": "Giemsa", "D": None, "answer": "B", "category": "stain",
         "image": base64.b64encode(fx.png(7, 3)).decode()},
        {"index": 11, "question": "Which organ?", "hint": None, "A": "liver", "B": "kidney", "C": "lung",
         "D": "heart", "answer": "D", "category": "organ", "image": "Zm9v" * 40},
    ]  # fmt: skip
    pd.DataFrame(rows).to_parquet(tmp_path / "mmbench.parquet")
    loaded = get_benchmark("hf").load(f"{tmp_path / 'mmbench.parquet'}?task=category")
    first, second = loaded.items
    assert (first.id, first.choices, first.answer_index, first.context) == (
        "hf/10",
        ("H&E", "PAS", "Giemsa"),
        1,
        "A liver section.",
    )
    assert first.task == "stain" and first.images[0].load().size == (7, 3)
    # Text of no image is read as a path: missing, and the problem quotes only its beginning.
    (missing,) = [p for p in loaded.problems if p.kind == "missing_image"]
    assert second.problems == ("missing_image",) and "Zm9v" * 20 not in missing.message
