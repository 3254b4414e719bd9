"""The password rule of new accounts (NIST SP 800-63B): length, common passwords, guessability.

At least 8 characters and at most 256 (SP 800-63B asks verifiers to accept 64 or more); no
composition rules (no "a digit and a symbol"); refused when it is one of the 30,000 most common
passwords (zxcvbn's list, compared case-insensitively) or when zxcvbn estimates it guessable (a
score under 3 of 4, i.e. under about 10⁸ guesses; the username and the application's name count
as known words). The message passes on zxcvbn's advice.
"""

from __future__ import annotations

from scopebench.review.errors import Invalid

__all__ = ["MAX_LENGTH", "MIN_LENGTH", "MIN_SCORE", "check_password"]

MIN_LENGTH = 8
MAX_LENGTH = 256
MIN_SCORE = 3
_CONTEXT_WORDS = ("scopebench", "review", "password")


def check_password(password: str, username: str) -> None:
    """Refuse a password that a guesser would try early.

    Raises:
        Invalid: With the reason and what makes a good password.
    """
    if len(password) < MIN_LENGTH:
        raise Invalid(f"a password has at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise Invalid(f"a password has at most {MAX_LENGTH} characters")
    from zxcvbn import zxcvbn
    from zxcvbn.matching import RANKED_DICTIONARIES

    advice = "a few uncommon words, or a password manager's random password, make a strong one"
    if password.lower() in RANKED_DICTIONARIES["passwords"] or not password.strip():
        raise Invalid(f"this password is on a list of common passwords; {advice}")
    result = zxcvbn(password, user_inputs=[username, *_CONTEXT_WORDS])
    if result["score"] < MIN_SCORE:
        feedback = result["feedback"]
        hints = " ".join(x for x in [feedback.get("warning") or "", *feedback.get("suggestions", [])] if x)
        raise Invalid(
            f"this password is too easy to guess (strength {result['score']} of 4; {MIN_SCORE} needed)"
            + (f": {hints}" if hints else "")
            + f"; {advice}"
        )
