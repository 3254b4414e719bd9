"""``--gen-arg temperature=… top_p=… n=…``: sampling beyond greedy, every sample kept with its seed.

Against the local OpenAI-compatible server (tests/openai_server.py: its ``pick:`` model draws a
label with the request's seed when the temperature is above 0) and the refusals for backends
that cannot sample.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from openai_server import ChatServer
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ConfigMismatchError, ModelSpecError
from scopebench.models import ModelOptions, load_model
from scopebench.models.sampling import check_gen_args, majority
from scopebench.store import load_run

GEN = {"temperature": 1.0, "top_p": 0.9, "n": 5}


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    with ChatServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "cache"))


def _config(server: ChatServer, **changes: object) -> RunConfig:
    options: dict[str, object] = {"base_url": server.base_url, "seed": 3, "gen_args": GEN,
                                  "model_args": {"cache": False}, **changes}  # fmt: skip
    return RunConfig.from_options("unit", "6", "openai:pick:A,B,C,D", **options)


def test_each_sample_has_its_seed_and_the_majority_decides(server: ChatServer, tmp_path: Path) -> None:
    # Catches: one request sent for n samples (or all with one seed), samples not kept in the
    # record, the headline choice not the majority of the parsed samples, and metrics that do not
    # average over samples.
    server.state.reset()
    result = run_benchmark(_config(server), tmp_path / "a")
    bodies = [e.body for e in server.state.log]
    assert len(bodies) == 6 * 5
    assert sorted(Counter(b["seed"] for b in bodies).items()) == [(s, 6) for s in range(3, 8)]
    assert all(b["temperature"] == 1.0 and b["top_p"] == 0.9 for b in bodies)
    records = load_run(tmp_path / "a").records
    shares = []
    for rec in records:
        samples = rec.extra["samples"]
        assert [s["seed"] for s in samples] == [3, 4, 5, 6, 7]
        assert all(s["choice"] == "ABCD".index(s["text"][-1]) for s in samples)
        assert rec.choice == majority([s["choice"] for s in samples])
        assert rec.response == f"Answer: {'ABCD'[rec.choice]}"
        shares.append(sum(s["choice"] == rec.answer_index for s in samples) / 5)
    # The draws differ between samples, or the test would not tell mean from majority.
    assert any(len({s["choice"] for s in r.extra["samples"]}) > 1 for r in records)
    sampling = result.metrics["sampling"]
    assert sampling["samples_per_item"] == 5 and sampling["items"] == 6
    assert sampling["mean_accuracy"] == pytest.approx(sum(shares) / 6)
    assert sampling["majority_accuracy"] == pytest.approx(sum(r.correct is True for r in records) / 6)
    assert sampling["majority_accuracy"] == pytest.approx(result.metrics["overall"]["accuracy"])
    run_json = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run_json["gen_args"] == GEN and run_json["model_identity"]["gen_args"] == GEN


def test_same_seed_same_replies_another_seed_others(server: ChatServer, tmp_path: Path) -> None:
    # Catches: seeds not sent (the replies would then not follow --seed) or not reproducible.
    def replies(seed: int, out: str) -> list[list[str]]:
        run_benchmark(replace(_config(server), seed=seed), tmp_path / out)
        return [[s["text"] for s in r.extra["samples"]] for r in load_run(tmp_path / out).records]

    assert replies(3, "a") == replies(3, "b")
    assert replies(3, "a") != replies(11, "c")


def test_greedy_runs_keep_no_samples(server: ChatServer, tmp_path: Path) -> None:
    # Catches: the sampling path taken (or a seed sent) when no --gen-arg is given.
    server.state.reset()
    result = run_benchmark(_config(server, gen_args={}), tmp_path / "g")
    assert len(server.state.log) == 6 and all("seed" not in e.body for e in server.state.log)
    assert all("samples" not in r.extra for r in load_run(tmp_path / "g").records)
    assert result.metrics["sampling"] == {}
    assert json.loads((tmp_path / "g" / "run.json").read_text())["gen_args"] is None


def test_resume_refuses_other_gen_args(server: ChatServer, tmp_path: Path) -> None:
    # Catches: gen_args outside the run's identity (a resume would mix 5-sample and 3-sample items).
    run_benchmark(_config(server), tmp_path / "r")
    with pytest.raises(ConfigMismatchError, match="gen_args"):
        run_benchmark(_config(server, gen_args={**GEN, "n": 3}), tmp_path / "r")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"top_p": 0}, r"top_p=0 must be in \(0, 1\]"),
        ({"top_p": 1.5}, "top_p"),
        ({"n": 0}, "integer ≥ 1"),
        ({"n": 2.5}, "integer ≥ 1"),
        ({"n": True}, "integer ≥ 1"),
        ({"temperature": "hot"}, "must be a number"),
        ({"top_k": 5}, "unknown --gen-arg top_k; known: n, temperature, top_p"),
    ],
)
def test_gen_args_are_checked(raw: dict[str, object], message: str) -> None:
    # Catches: out-of-range or unknown settings passed on to a backend that would fail later, or
    # silently sample with a setting the user did not mean.
    with pytest.raises(ModelSpecError, match=message):
        check_gen_args(raw)


def test_gen_args_typed() -> None:
    # Catches: an integer temperature kept as int (the recorded identity would then differ
    # between temperature=1 and temperature=1.0).
    assert check_gen_args({"temperature": 1, "top_p": 1, "n": 2}) == {
        "n": 2,
        "temperature": 1.0,
        "top_p": 1.0,
    }


@pytest.mark.parametrize("spec", ["random", "frequent"])
def test_refused_for_backends_that_cannot_sample(spec: str) -> None:
    # Catches: a baseline silently ignoring --gen-arg (its "samples" would all be one answer).
    with pytest.raises(ModelSpecError, match="cannot sample"):
        load_model(spec, ModelOptions(gen_args={"n": 3}))


def test_majority_ties_go_to_the_first_and_unparsed_do_not_vote() -> None:
    # Catches: an unparsed sample counted as a vote, or a tie broken by option order.
    assert majority([None, 2, 1, 1, 2]) == 2
    assert majority([None, None]) is None
    assert majority([3, None, None]) == 3


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from scopebench.testing.tiny import build_tiny_generative

    return build_tiny_generative(tmp_path_factory.mktemp("hf") / "m", "llava", seed=0)


def _hf_samples(model: Path, out: Path, seed: int) -> list[list[str]]:
    cfg = RunConfig.from_options("unit", "4", f"hf:{model}", no_image=True, seed=seed, batch_size=4,
                                 gen_args={"temperature": 1.5, "n": 3},
                                 model_args={"max_new_tokens": 6})  # fmt: skip
    run_benchmark(cfg, out)
    records = load_run(out).records
    assert all([s["seed"] for s in r.extra["samples"]] == [seed, seed + 1, seed + 2] for r in records)
    return [[s["text"] for s in r.extra["samples"]] for r in records]


def test_hf_sampling_is_reproducible_with_a_seed(tiny_hf: Path, tmp_path: Path) -> None:
    # Catches: sampling left greedy (the samples of an item would all be equal), a seed not set
    # before each pass (the same seed would then give other replies), or --seed not followed.
    first = _hf_samples(tiny_hf, tmp_path / "a", seed=0)
    assert first == _hf_samples(tiny_hf, tmp_path / "b", seed=0)
    assert any(len(set(texts)) > 1 for texts in first)
    assert first != _hf_samples(tiny_hf, tmp_path / "c", seed=5)


def test_hf_choice_logprob_cannot_sample(tiny_hf: Path) -> None:
    # Catches: choice-logprob (option scores, nothing drawn) accepting --gen-arg and ignoring it.
    with pytest.raises(ModelSpecError, match="cannot sample"):
        load_model(f"hf:{tiny_hf}", ModelOptions(mode="choice-logprob", gen_args={"n": 2}))
