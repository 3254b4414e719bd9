"""``--gen-arg temperature=… top_p=… n=…``: sampling beyond greedy, every sample kept with its seed.

Against the local OpenAI-compatible chat_server (tests/openai_server.py: its ``pick:`` model draws a
label with the request's seed when the temperature is above 0) and the refusals for backends
that cannot sample.
"""

from __future__ import annotations

import json
from collections import Counter
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


# Every test here gets an API key and a cache of its own (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("openai_env")


def _config(chat_server: ChatServer, **changes: object) -> RunConfig:
    options: dict[str, object] = {"base_url": chat_server.base_url, "seed": 3, "gen_args": GEN,
                                  "model_args": {"cache": False}, **changes}  # fmt: skip
    return RunConfig.from_options("unit", "6", "openai:pick:A,B,C,D", **options)


def test_each_sample_has_its_seed_and_the_majority_decides(chat_server: ChatServer, tmp_path: Path) -> None:
    # Catches: one request sent for n samples (or all with one seed), samples not kept in the
    # record, the headline choice not the majority of the parsed samples, and metrics that do not
    # average over samples.
    chat_server.state.reset()
    result = run_benchmark(_config(chat_server), tmp_path / "a")
    bodies = [e.body for e in chat_server.state.log]
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


def test_same_seed_same_replies_another_seed_others(chat_server: ChatServer, tmp_path: Path) -> None:
    # Catches: seeds not sent (the replies would then not follow --seed) or not reproducible.
    def replies(seed: int, out: str) -> list[list[str]]:
        run_benchmark(replace(_config(chat_server), seed=seed), tmp_path / out)
        return [[s["text"] for s in r.extra["samples"]] for r in load_run(tmp_path / out).records]

    assert replies(3, "a") == replies(3, "b")
    assert replies(3, "a") != replies(11, "c")


def test_greedy_runs_keep_no_samples(chat_server: ChatServer, tmp_path: Path) -> None:
    # Catches: the sampling path taken (or a seed sent) when no --gen-arg is given.
    chat_server.state.reset()
    result = run_benchmark(_config(chat_server, gen_args={}), tmp_path / "g")
    assert len(chat_server.state.log) == 6 and all("seed" not in e.body for e in chat_server.state.log)
    assert all("samples" not in r.extra for r in load_run(tmp_path / "g").records)
    assert result.metrics["sampling"] is None
    assert json.loads((tmp_path / "g" / "run.json").read_text())["gen_args"] is None


def test_resume_refuses_other_gen_args(chat_server: ChatServer, tmp_path: Path) -> None:
    # Catches: gen_args outside the run's identity (a resume would mix 5-sample and 3-sample items).
    run_benchmark(_config(chat_server), tmp_path / "r")
    with pytest.raises(ConfigMismatchError, match="gen_args"):
        run_benchmark(_config(chat_server, gen_args={**GEN, "n": 3}), tmp_path / "r")


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


def test_vllm_sends_each_sample_with_its_seed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # vLLM is not installed here: a stand-in module records the SamplingParams and answers with
    # the seed it was given, which checks the wiring real vLLM gets (the real engine is tested by
    # tests/models/test_vllm_backend.py where it imports).
    # Catches: samples regrouped to the wrong item or seed (texts[i::n] off by one), all samples
    # sent with the run's seed, or --gen-arg temperature/top_p not reaching SamplingParams.
    import sys
    import types

    from helpers import make_items

    sent: list[dict[str, object]] = []

    class SamplingParams:
        def __init__(self, **kwargs: object) -> None:
            sent.append(kwargs)
            self.kwargs = kwargs

    class LLM:
        def __init__(self, **kwargs: object) -> None:
            pass

        def chat(
            self, convs: list[object], sampling_params: list[SamplingParams], use_tqdm: bool
        ) -> list[object]:
            return [
                types.SimpleNamespace(
                    prompt_token_ids=[1],
                    outputs=[
                        types.SimpleNamespace(
                            text=f"seed {p.kwargs['seed']} item {k // GEN['n']}",
                            finish_reason="stop",
                            token_ids=[1],
                        )
                    ],
                )
                for k, p in enumerate(sampling_params)
            ]

    stub = types.ModuleType("vllm")
    stub.SamplingParams, stub.LLM = SamplingParams, LLM  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", stub)
    backend = load_model("vllm:m", ModelOptions(seed=2, no_image=True, gen_args=GEN))
    items = make_items(2)
    responses = backend.answer([backend.render(it) for it in items])
    assert all(p["temperature"] == 1.0 and p["top_p"] == 0.9 and "n" not in p for p in sent)
    for k, resp in enumerate(responses):
        assert [s["seed"] for s in resp.extra["samples"]] == [2, 3, 4, 5, 6]
        assert [s["text"] for s in resp.extra["samples"]] == [f"seed {s} item {k}" for s in range(2, 7)]


def test_the_documented_sampling_example_runs(
    tiny_hf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches: docs/models.md showing a --gen-arg command the CLI refuses, or one whose run does
    # not keep the samples and their seeds the docs describe.
    import re
    import shlex
    import shutil

    from helpers import REPO
    from scopebench.benchmarks.demo import DEMO_VERSION, generate_demo
    from scopebench.cli import main

    generate_demo(tmp_path / "cache" / "demo" / f"v{DEMO_VERSION}-seed0", seed=0)
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_hf, tmp_path / "models" / "tiny-vlm")
    text = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    [block] = re.findall(r"<!-- test: gen-args -->\n```console\n(.*?)```", text, re.S)
    [line] = [x for x in block.splitlines() if x.startswith("scopebench ")]
    assert main(["-q", *shlex.split(line)[1:]]) == 0
    run_json = json.loads((tmp_path / "runs/demo-sampled/run.json").read_text())
    assert run_json["gen_args"] == {"n": 3, "temperature": 1.2, "top_p": 0.95}
    records = load_run(tmp_path / "runs/demo-sampled").records
    assert len(records) == 4
    assert all([s["seed"] for s in r.extra["samples"]] == [1, 2, 3] for r in records)
    metrics = json.loads((tmp_path / "runs/demo-sampled/metrics.json").read_text())
    assert metrics["sampling"]["samples_per_item"] == 3


def test_cli_refuses_bad_gen_args_without_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Catches: a bad --gen-arg reaching the backend (or a traceback instead of the message).
    from scopebench.cli import main

    run = ["run", "--bench", "unit", "--data", "4", "--model", "random", "--out", str(tmp_path / "r")]
    assert main([*run, "--gen-arg", "n=0"]) != 0
    err = capsys.readouterr().err
    assert "--gen-arg n=0" in err and "Traceback" not in err
    assert main([*run, "--gen-arg", "n=2"]) != 0
    assert "cannot sample" in capsys.readouterr().err


def test_eval_configs_take_gen_args(tmp_path: Path) -> None:
    # Catches: an eval config's model entry refusing gen_args, dropping them on the way to the run
    # config, or letting an out-of-range value through to the backend.
    from scopebench.paper.grid import load_eval_config, plan_grid

    path = tmp_path / "eval.yaml"
    path.write_text(
        "models: [{spec: 'openai:m', gen_args: {temperature: 0.7, n: 4}}]\nbenchmarks: [demo]\n",
        encoding="utf-8",
    )
    [run] = plan_grid(load_eval_config(path), tmp_path / "runs")
    assert run.config.gen_args == {"n": 4, "temperature": 0.7}
    path.write_text(
        "models: [{spec: 'openai:m', gen_args: {top_p: 2}}]\nbenchmarks: [demo]\n", encoding="utf-8"
    )
    with pytest.raises(ModelSpecError, match="top_p"):
        plan_grid(load_eval_config(path), tmp_path / "runs")


def test_strategies_refuse_gen_args(chat_server: ChatServer) -> None:
    # Catches: a chain-of-thought run with --gen-arg silently answering with one greedy-looking reply.
    from scopebench.models.strategies import StrategyBackend

    inner = load_model("openai:pick:A,B", ModelOptions(base_url=chat_server.base_url, gen_args={"n": 2}))
    with pytest.raises(ModelSpecError, match="drop --strategy or --gen-arg"):
        StrategyBackend(inner, "step-by-step")
