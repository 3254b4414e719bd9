"""How option text is read clause by clause (parsing/_text.py's clause and ruling-out helpers).

Guards the helpers `parse_choice`'s option-text rule and answer phrases lean on: `clause_starts`
(where a clause or sentence begins), `ruled_out` and its parts (`_so_is`, `_described`,
`_among_others`, `_less_than`), `question_sentences`, `negated_after`, `more_specific` and the
bounded work of `resolve`. Each row is a reply a VLM writes about a pathology MCQ, with the exact
reading a user gets (index, method, reason); the comment says which misreading it catches.
"""

from __future__ import annotations

import pytest

from scopebench.parsing import _text, parse_choice
from scopebench.parsing._text import TextMatch, clause_starts, find_mentions, resolve, ruled_out, tokenize

FOUR = ("Whorled pattern", "Spindle cells", "Rosette formation", "Necrosis")
CARCINOMAS = ("Carcinoma", "Small cell carcinoma", "Lymphoma", "Sarcoma")
MICRO = ("Increase", "Decrease", "No change", "Cannot determine", "Oscillates")
CELLS = ("Neutrophil", "Lymphocyte", "Eosinophil", "Other")

_C = "text of option C found"


@pytest.mark.parametrize(
    ("reply", "index", "reason", "why"),
    [
        # --- "so is"/"as is": only after a ruling-out in the same sentence (_so_is)
        ("Whorled pattern is not seen, but there is rosette formation.", 2, _C,
         '"there is" before C is no "so is": C does not share A\'s "not"'),
        ("Whorled pattern is absent, so only rosette formation fits.", 2, _C,
         '"so only" (no verb) is no "so is"'),
        ("Necrosis is not seen. Whorled pattern is present, and so is rosette formation.", None,
         "several options named: A, C", '"so is" shares only its own sentence\'s verdict ("present")'),
        ("Spindle cells are present, and so is necrosis. No rosette formation is seen.", None,
         "several options named: B, D",
         'the "No" of the next sentence neither rules necrosis out through "so is" nor as a verdict after it'),
        # --- "The features of X …" opening a sentence is a description, not a verdict (_described)
        ("The findings show rosette formation.", 2, _C, '"findings show X" (no "of") describes nothing'),
        ("Hallmarks of necrosis include karyorrhexis; here the cells show rosette formation.", 2, _C,
         "the attribute noun as the reply's first word"),
        ("The image shows rosette formation. The features of necrosis include karyorrhexis and pyknosis.",
         2, _C, "a description opening a later sentence (its start counted from that sentence)"),
        ("The typical features of necrosis include karyorrhexis; this image shows rosette formation.", 2, _C,
         "two words before the attribute noun still open the sentence"),
        ("Rosette formation is seen, but features of necrosis are also present.", None,
         "several options named: C, D", '"but" opens a clause, not a sentence: the features are no opener'),
        # --- "the other options, such as X" sets X aside (_among_others)
        ("Rosette formation is seen here. The rest of the choices include necrosis.", 2, _C,
         '"rest of" counts like "other options"'),
        ("Compared with other tumours, this shows rosette formation.", 2, _C,
         '"other tumours" are no other options'),
        ("I considered the other options carefully. The image shows rosette formation.", 2, _C,
         '"other options" in an earlier sentence sets nothing aside in this one'),
        ("Rosette formation is seen. The other option, necrosis, would show karyorrhexis.", 2, _C,
         '"other option" right before the mention (two tokens back)'),
        # --- "less … than": the option after "than" is the favoured one (_less_than)
        ("Less necrosis than rosette formation.", 2, _C, '"less X than" at the very start of the reply'),
        ("Rosette formation is evident; there is less of a whorled pattern.", 2, _C,
         '"less of a X" (no "than") rules X out'),
        # --- clause boundaries (clause_starts)
        ("Not necrosis but rosette formation.", 2, _C, '"but" opens a new clause: the "not" stays behind'),
        ("No - rosette formation.", 2, _C, 'the gap after the first token ("No -") is a boundary too'),
        ("No, it is rosette formation.", 2, _C, 'the "No," before the verdict is its own clause'),
        ("No reason to choose necrosis; rosette formation fits.", 2, _C,
         'only "and"/"then" before a choice verb opens a clause, not "to"'),
        ("I would not want to choose necrosis here; rosette formation is the better fit.", 2, _C,
         'the "not" before "to choose" still rules necrosis out'),
        ("There is no necrosis and hardly any whorled pattern; rosette formation dominates.", 2, _C,
         'a plain "and" keeps the "no" in force'),
        ("Whorled pattern is absent, so rosette formation then", 2, _C,
         'a reply ending in "then" (a joiner with nothing after it)'),
        ("Rosette formation is seen here and in", 2, _C, 'a reply cut off after "and in"'),
        # --- after the mention (ruled_out)
        ("Whorled pattern is typically seen in meningioma; this image shows rosette formation.", 2, _C,
         "a generic remark is read after its mention only"),
        ("The image shows rosette formation in the centre, often seen in neuroblastoma.", 2, _C,
         "a generic word four tokens after the mention is no remark about it"),
        ("Rosette formation, not necrosis.", 2, _C, 'the "not" after the comma speaks of necrosis'),
        ("Rosette formation or not, the tumour lacks necrosis.", 2, _C,
         '"or not" right after a mention does not rule it out'),
        # --- questions (question_sentences)
        ("Is this necrosis? The cells show rosette formation.", 2, _C, "necrosis is only asked about"),
        ("What we see is rosette formation. Any necrosis? No.", 2, _C,
         'a statement opening with "What" is no question because a later one is'),
        ("What I see is rosette formation. Right?", 2, _C,
         'the "?" of the last sentence does not make the one before it a question'),
    ],
)  # fmt: skip
def test_option_text_clauses(reply: str, index: int | None, reason: str, why: str) -> None:
    got = parse_choice(reply, FOUR)
    assert (got.index, got.method, got.reason) == (index, "option_text", reason), why


def test_an_option_called_other_is_no_other_options() -> None:
    # "Other" as the whole reply: only the words before a mention can set it among "the other
    # options" (looking at the mention's own word read past the end of the reply)
    got = parse_choice("Other.", CELLS)
    assert (got.index, got.method, got.reason) == (3, "option_text", "text of option D found")


@pytest.mark.parametrize(
    ("reply", "choices", "index", "reason", "why"),
    [
        ("This is a carcinoma, namely small cell carcinoma; small cell carcinoma fits the smoking history.",
         CARCINOMAS, 1, "option B named as the specific verdict",
         "the specific option named again later is still the verdict"),
        ("It is a carcinoma, namely small cell carcinoma or another carcinoma.", CARCINOMAS, None,
         "several options named: A, B", "the general option named again after the specific one"),
        ("The carcinoma is particularly large and small cell carcinoma is also possible.", CARCINOMAS, None,
         "several options named: A, B", '"particularly" three words before introduces something else'),
        ("Namely: carcinoma, small cell carcinoma.", CARCINOMAS, 1, "option B named as the specific verdict",
         "the specifier as the reply's first word"),
        ("Specifically, carcinoma.", ("Carcinoma", "Carcinoma", "Sarcoma"), None,
         "several options named: A, B", "two options with the same text: neither is the more specific"),
    ],
)  # fmt: skip
def test_more_specific_option(
    reply: str, choices: tuple[str, ...], index: int | None, reason: str, why: str
) -> None:
    got = parse_choice(reply, choices)
    assert (got.index, got.method, got.reason) == (index, "option_text", reason), why


def test_answer_phrase_reads_ruling_out_after_the_option_only() -> None:
    # "No" is part of the option's own text, not a ruling-out after it (negated_after's window
    # starts after the option)
    got = parse_choice("The answer is No change.", MICRO, labels="numbers")
    assert (got.index, got.method, got.reason) == (2, "answer_phrase", "answer phrase names 3")
    # …and the window after it is read: "not being present" withdraws the answer
    got = parse_choice("I'd go with necrosis not being present.", FOUR)
    assert (got.index, got.method, got.reason) == (
        None,
        "option_text",
        "options named only to be ruled out: D",
    )


def test_resolve_compares_each_match_with_a_bounded_number_of_others(monkeypatch: pytest.MonkeyPatch) -> None:
    # resolve promises linear work: a match is compared only with matches starting at most one
    # option length before it. Widening that window gives the same matches but quadratic time on
    # a long walk-through (tests/parsing/test_speed.py is outside mutmut's selection), so count.
    said = [t.value for t in tokenize("Necrosis, fibrosis. " * 100)]
    found = find_mentions(said, [("necrosis",), ("fibrosis",)])
    calls = 0
    beats = _text._beats

    def counting(a: TextMatch, b: TextMatch) -> bool:
        nonlocal calls
        calls += 1
        return beats(a, b)

    monkeypatch.setattr(_text, "_beats", counting)
    assert resolve(found) == found  # side by side, none covers another
    assert len(found) == 200
    assert calls <= 4 * len(found)  # 399 here; a window from token 0 takes 20,100


def test_clause_starts_at_a_joiner_before_a_choice_or_favour_even_as_the_last_words() -> None:
    # A direct test: when these are a reply's last tokens no mention or answer follows them, so no
    # parse shows it, but the split is the helper's contract (its docstring).
    text = "Against B and in favour"
    assert clause_starts(text, tokenize(text)) == [0, 0, 2, 2, 2]
    text = "Rule out D and choose"
    assert clause_starts(text, tokenize(text)) == [0, 0, 0, 3, 3]
    assert clause_starts(text, tokenize(text), sentences=True) == [0, 0, 0, 0, 0]


def test_or_ending_an_option_text_is_not_a_later_joiner() -> None:
    # "consistent with X and not with Y": a "not" right after "and"/"or" speaks of what follows.
    # An option text that itself ends in "or" ("Either/or") is followed by its own ruling-out.
    # A direct test: no benchmark option text ends in "and"/"or".
    text = "Either/or not seen"
    tokens = tokenize(text)
    values = [t.value for t in tokens]
    starts = clause_starts(text, tokens)
    assert ruled_out(values, starts, clause_starts(text, tokens, sentences=True), 0, 2)
