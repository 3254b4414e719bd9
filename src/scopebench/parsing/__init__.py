"""Response parsing: free text → the option it commits to, with the reason when there is none.

See :mod:`scopebench.parsing.choice` for the rules, in the order they apply.
"""

from scopebench.parsing.choice import PARSER_VERSION, LabelStyle, ParseResult, parse_choice

__all__ = ["PARSER_VERSION", "LabelStyle", "ParseResult", "parse_choice"]
