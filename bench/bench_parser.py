"""Time :func:`scopebench.parsing.parse_choice` on long, adversarial responses.

Greedy decoding loops and servers that ignore ``max_tokens`` produce replies of tens or hundreds of
thousands of characters; the parser must stay linear on them. Each shape is a repeated unit cut to
the requested length; each figure is the minimum of ``--repeat`` runs.

Usage: ``python bench/bench_parser.py [--sizes 10000 20000 40000 320000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import platform
import time

from scopebench.parsing import PARSER_VERSION, parse_choice

OPTIONS = ("Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis")

#: Repeated units, one per adversarial shape (each also used by tests/parsing/test_speed.py).
SHAPES: dict[str, str] = {
    "answer loop": "Answer: A ",
    "answer phrase loop": "The answer is A ",
    "hedge loop": "I think it is B I would say ",
    "reverse verdict loop": "B is the correct answer ",
    "verdict text loop": "The most likely diagnosis is rosette formation ",
    "negation loop": "not necrosis no spindle cells ",
    "long walk": "A) whorled pattern is not seen\nB) spindle cells are present\n",
    "no whitespace": "A",
    "brackets": "(A)(B)[C]{D}",
    "labels": "A. B) C: ",
    "tags": "<ANSWER> C ",
    "chinese": "答案是（A）",
    "corrections": "The answer is A. Wait, the answer is B. ",
    "option words": "rosette formation spindle cells ",
    "short hedge loop": "I suppose D. I would say ",
    "intro loop": "After careful thought, C. Having weighed it all, ",
    "lone label loop": "no. no, A. yes, ",
    "inline walk": "A: no. B: yes. ",
    "former loop": "Necrosis or spindle cells? The former. ",
    "marker loop": "The answer is A. Wait, actually, on closer inspection ",
    "sentence without end": "I would say that the cells are ",
    # choice-5 rules: hypotheses, questions, object verdicts, named first thoughts
    "conditional loop": "If the cells were larger, I would say C. If ",
    "question loop": "Is this necrosis or spindle cells ",
    "object verdict loop": "which makes C the best option and leaves ",
    "first thought loop": "At first I thought B, but however final answer: C ",
    # choice-6 rules: hedged lead-ins, tentative labels, changes of mind, text with its label,
    # ordinals, alternatives after the answer, answers about to be given, Chinese verdicts
    "hedged lead loop": "With moderate confidence: C. Hard to be sure, but ",
    "tentative loop": "Perhaps A? Maybe B. Plausibly ",
    "reflection loop": "C. On reflection, B. Thinking again, ",
    "text label loop": "In summary, necrosis - option D, spindle cells (C), ",
    "ordinal loop": "The second option is correct. I would go with the third option or ",
    "alternative loop": "D is the best fit, or perhaps C. Or maybe ",
    "about to loop": "I was going to say A, however ",
    "chinese verdict loop": "这张图最符合B。不太可能是A。",
    # choice-10 rules: language phrases, role markers, options listed on one line
    "language loop": "Die Antwort ist C. Nicht A, sondern B. 答えはCではなく ",
    "role marker loop": "USER: Which? ASSISTANT: ",
    "listed options loop": "A. Whorled pattern B. Spindle cells ",
}


def make(shape: str, size: int) -> str:
    """The shape's unit repeated and cut to ``size`` characters."""
    unit = SHAPES[shape]
    return (unit * (size // len(unit) + 1))[:size]


def time_one(text: str, repeat: int) -> float:
    """Minimum wall time of ``repeat`` parses, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        parse_choice(text, OPTIONS)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    """Print a markdown table of seconds per shape and size."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 40_000, 320_000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"parser {PARSER_VERSION}, {platform.machine()}, Python {platform.python_version()}")
    print("| shape | " + " | ".join(f"{n:,} chars" for n in args.sizes) + " |")
    print("|---|" + "---:|" * len(args.sizes))
    for shape in SHAPES:
        cells = [f"{time_one(make(shape, n), args.repeat):.3f}" for n in args.sizes]
        print(f"| {shape} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
