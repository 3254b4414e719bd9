"""The parser stays linear on long, adversarial replies.

Greedy decoding loops ("Answer: A Answer: A …") and servers that ignore ``max_tokens`` produce
tens or hundreds of thousands of characters. A quadratic
parser takes tens of seconds on 20k characters of such a loop; these tests give each 40k-character shape a generous 20 s (about 50× what it takes
now on a loaded 2-core machine), so only a quadratic regression trips them. bench/bench_parser.py
prints the figures.
"""

from __future__ import annotations

import pytest

from scopebench.parsing import parse_choice

OPTIONS = ("Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis")

SHAPES = {
    "answer-loop": "Answer: A ",
    "answer-phrase-loop": "The answer is A ",
    "hedge-loop": "I think it is B I would say ",
    "reverse-verdict-loop": "B is the correct answer ",
    "verdict-text-loop": "The most likely diagnosis is rosette formation ",
    "negation-loop": "not necrosis no spindle cells ",
    "long-walk": "A) whorled pattern is not seen\nB) spindle cells are present\n",
    "no-whitespace": "A",
    "brackets": "(A)(B)[C]{D}",
    "labels": "A. B) C: ",
    "tags": "<ANSWER> C ",
    "chinese": "答案是（A）",
    "corrections": "The answer is A. Wait, the answer is B. ",
    "option-words": "rosette formation spindle cells ",
    # short hedge sentences, intros, lone labels, walks, references, markers
    "short-hedge-loop": "I suppose D. I would say ",
    "intro-loop": "After careful thought, C. Having weighed it all, ",
    "lone-label-loop": "no. no, A. yes, ",
    "inline-walk": "A: no. B: yes. ",
    "former-loop": "Necrosis or spindle cells? The former. ",
    "marker-loop": "The answer is A. Wait, actually, on closer inspection ",
    "sentence-without-end": "I would say that the cells are ",
    # hypotheses, questions, object verdicts, named first thoughts
    "conditional-loop": "If the cells were larger, I would say C. If ",
    "question-loop": "Is this necrosis or spindle cells ",
    "object-verdict-loop": "which makes C the best option and leaves ",
    "first-thought-loop": "At first I thought B, but however final answer: C ",
    # hedged lead-ins, tentative labels, changes of mind, text with its label,
    # ordinals, alternatives after the answer, answers about to be given, Chinese verdicts
    "hedged-lead-loop": "With moderate confidence: C. Hard to be sure, but ",
    "tentative-loop": "Perhaps A? Maybe B. Plausibly ",
    "reflection-loop": "C. On reflection, B. Thinking again, ",
    "text-label-loop": "In summary, necrosis - option D, spindle cells (C), ",
    "ordinal-loop": "The second option is correct. I would go with the third option or ",
    "alternative-loop": "D is the best fit, or perhaps C. Or maybe ",
    "about-to-loop": "I was going to say A, however ",
    "chinese-verdict-loop": "这张图最符合B。不太可能是A。",
    # language phrases, role markers, options listed on one line
    "language-loop": "Die Antwort ist C. Nicht A, sondern B. 答えはCではなく ",
    "role-marker-loop": "USER: Which? ASSISTANT: ",
    "listed-options-loop": "A. Whorled pattern B. Spindle cells ",
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("shape", ["long-walk", "language-loop", "role-marker-loop", "answer-loop"])
def test_40k_characters_cut_and_echoing_a_40k_prompt(shape: str) -> None:
    # The reply's facts add passes over the reply and the prompt, never a product of the two.
    text = _make(SHAPES[shape], 40_000)
    got = parse_choice(text, OPTIONS, finish_reason="length", prompt=text[:-7])
    assert got.index is None or 0 <= got.index < len(OPTIONS)


def _make(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_40k_characters_of_any_shape(shape: str) -> None:
    text = _make(SHAPES[shape], 40_000)
    got = parse_choice(text, OPTIONS)
    assert got.index is None or 0 <= got.index < len(OPTIONS)


@pytest.mark.timeout(60)
def test_320k_answer_loop_finishes() -> None:
    # A server ignoring max_tokens: 320k characters of a repeated answer stalled a run for 10 min.
    got = parse_choice(_make("Answer: A ", 320_000), OPTIONS)
    assert (got.index, got.method) == (0, "answer_phrase")


@pytest.mark.timeout(60)
def test_320k_option_text_finishes() -> None:
    got = parse_choice(_make("rosette formation and more rosette formation. ", 320_000), OPTIONS)
    assert (got.index, got.method) == (2, "option_text")
