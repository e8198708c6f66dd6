"""The C++/CUDA source model the mutation operators work on: a masked copy of the source (comments,
string and character literals, preprocessor lines, `static_assert(...)` and `__launch_bounds__(...)`
blanked out, offsets kept), bracket matching, expression bounds and comparisons, and the edits and
mutants the operators produce. operators.py holds the operators themselves.
"""
import bisect
import re
from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# The source, masked


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    replacement: str
    description: str


@dataclass(frozen=True)
class Mutant:
    name: str
    operator: str
    line: int
    start: int
    end: int
    replacement: str
    description: str

    def apply(self, text):
        """The mutated source."""
        return text[:self.start] + self.replacement + text[self.end:]


_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_NO_MUTATE_CALLS = re.compile(r"\b(static_assert|__launch_bounds__)\s*\(")


def mask(text):
    """`text` with comments, string/char literals and preprocessor lines turned into spaces.

    Newlines and every offset are kept, so a position in the mask is a position in the text.
    """
    out = list(text)
    n = len(text)
    i = 0
    line_start = True  # only whitespace since the last newline

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            j = i
            while j < n:
                if text[j] == "\n" and text[j - 1] != "\\":
                    break
                if text.startswith("/*", j):  # a block comment may continue past the directive
                    close = text.find("*/", j + 2)
                    j = n if close < 0 else close + 2
                    continue
                j += 1
            blank(i, j)
            i = j
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            blank(i, j)
            i = j
        else:
            i += 1
    return "".join(out)


class Source:
    """A source file with its mask, bracket pairs and line numbers."""

    def __init__(self, text):
        self.text = text
        code = mask(text)
        self.match = _match_brackets(code)
        # Comparisons inside static_assert and __launch_bounds__ only change what compiles or
        # how many registers it gets: never mutated.
        chars = list(code)
        for m in _NO_MUTATE_CALLS.finditer(code):
            open_at = m.end() - 1
            close_at = self.match.get(open_at)
            if close_at is not None:
                for k in range(m.start(), close_at + 1):
                    if chars[k] != "\n":
                        chars[k] = " "
        self.code = "".join(chars)
        self._newlines = [k for k, ch in enumerate(text) if ch == "\n"]

    def line_of(self, pos):
        """1-based line number of offset `pos`."""
        return bisect.bisect_right(self._newlines, pos - 1) + 1 if pos > 0 else 1

    def snippet(self, a, b, limit=70):
        """The source text a..b on one line, shortened in the middle past `limit` characters."""
        s = " ".join(self.text[a:b].split())
        if len(s) > limit:
            s = s[: limit // 2 - 2] + " … " + s[-(limit // 2 - 2):]
        return s


def _match_brackets(code):
    match = {}
    stack = []
    for i, c in enumerate(code):
        if c in _OPEN:
            stack.append(i)
        elif c in _CLOSE:
            # Unbalanced text (never in a compiling file) just leaves brackets unmatched.
            while stack and code[stack[-1]] != _CLOSE[c]:
                stack.pop()
            if stack:
                j = stack.pop()
                match[j] = i
                match[i] = j
    return match


# --------------------------------------------------------------------------------------------
# Expressions: how far an operand reaches

_WORD = re.compile(r"[A-Za-z_]\w*")


def _is_word_char(c):
    return c.isalnum() or c == "_"


def _is_assignment(code, i):
    """True when the `=` at i is an assignment (plain or compound), not part of ==, <=, >=, !=."""
    prev = code[i - 1] if i > 0 else ""
    nxt = code[i + 1] if i + 1 < len(code) else ""
    if nxt == "=" or prev in "=!":
        return False
    if prev in "<>":
        # `a <= b` is a comparison; `x <<= 2` and `x >>= 2` are assignments.
        return i >= 2 and code[i - 2] == prev
    return True


def _template_open(code, close_at):
    """For a template's closing `>` at close_at, the offset of its `<`; None if it is not one."""
    depth = 0
    i = close_at
    while i >= 0:
        c = code[i]
        if c == ">":
            depth += 1
        elif c == "<":
            depth -= 1
            if depth == 0:
                return i
        elif c in ";{}":
            return None
        i -= 1
    return None


def _is_template_close(code, i):
    """A `>` that closes a template argument list: not spaced on its left, not `->`, `>>`, `>=`."""
    if code[i] != ">" or i == 0:
        return False
    prev, nxt = code[i - 1], code[i + 1] if i + 1 < len(code) else ""
    if prev.isspace() or prev in "-=>" or nxt in "=>":
        return False
    return _template_open(code, i) is not None


def expression_bounds(src, pos, stop_at_logical=False, stop_at_comparison=False):
    """The span (a, b) of the expression around offset `pos` (an operator token).

    It reaches left and right up to an unmatched bracket, a `;`, `,`, `?` or `:` at its own
    depth, an assignment, or `return`; with `stop_at_logical`, also up to `&&`/`||`, and with
    `stop_at_comparison` up to a comparison operator (so it gives one operand of it).
    """
    code, match = src.code, src.match

    def boundary_at(i):
        c = code[i]
        if c in ";,?{}":
            return True
        if c == ":" and code[i - 1:i] != ":" and code[i + 1:i + 2] != ":":
            return True
        if c == "=" and _is_assignment(code, i):
            return True
        if stop_at_logical and c in "&|" and (code[i - 1:i + 1] in ("&&", "||") or code[i:i + 2] in ("&&", "||")):
            return True
        if stop_at_comparison and (_comparison_at(code, i) is not None
                                   or (i > 0 and _comparison_at(code, i - 1) in ("<=", ">=", "==", "!="))):
            return True
        return False

    # Left
    i = pos - 1
    a = None
    while i >= 0:
        c = code[i]
        if c in _CLOSE and i in match:
            i = match[i] - 1
            continue
        if c in _OPEN:
            break
        if c == ">" and _is_template_close(code, i):
            i = _template_open(code, i) - 1
            continue
        if boundary_at(i):
            break
        if _is_word_char(c) and (i == 0 or not _is_word_char(code[i - 1])):
            m = _WORD.match(code, i)
            if m and m.group(0) == "return":
                a = m.end()
                break
        i -= 1
    if a is None:
        a = i + 1
    # Right
    i = pos
    n = len(code)
    # step over the operator itself
    while i < n and code[i] in "&|<>=!":
        i += 1
    while i < n:
        c = code[i]
        if c in _OPEN and i in match:
            i = match[i] + 1
            continue
        if c in _CLOSE:
            break
        if boundary_at(i):
            break
        i += 1
    b = i
    while a < b and code[a].isspace():
        a += 1
    while b > a and code[b - 1].isspace():
        b -= 1
    return a, b


def _comparison_at(code, i):
    """The comparison operator starting at offset i (`<`, `<=`, `>`, `>=`, `==`, `!=`), else None.

    A comparison has whitespace on both sides (the sources are formatted that way); that is
    what tells it from a template bracket, `<<`, `->` or `<<<`.
    """
    two = code[i:i + 2]
    if two in ("<=", ">=", "==", "!="):
        if i > 0 and code[i - 1].isspace() and code[i + 2:i + 3].isspace():
            return two
        return None
    if code[i:i + 1] in ("<", ">"):
        if i > 0 and code[i - 1].isspace() and code[i + 1:i + 2].isspace():
            return code[i]
    return None


def _comparisons(code, a=0, b=None):
    """(offset, operator) of every comparison in code[a:b]."""
    i = a
    n = len(code) if b is None else b
    while i < n:
        op = _comparison_at(code, i)
        if op:
            yield i, op
            i += len(op)
        else:
            i += 1


def _change(src, a, b, start, end, replacement):
    """"`before` → `after`" for the expression a..b when start..end becomes `replacement`."""
    before = src.snippet(a, b)
    after = " ".join((src.text[a:start] + replacement + src.text[end:b]).split())
    if len(after) > 70:
        after = after[:33] + " … " + after[-33:]
    return f"`{before}` → `{after}`"


def _split_top(code, a, b, match, sep):
    """Offsets of `sep` tokens (spaced) at depth 0 inside code[a:b]."""
    found = []
    i = a
    while i < b:
        c = code[i]
        if c in _OPEN and i in match and match[i] < b:
            i = match[i] + 1
            continue
        if code.startswith(sep, i) and code[i - 1:i].isspace() and code[i + len(sep):i + len(sep) + 1].isspace():
            found.append(i)
            i += len(sep)
            continue
        i += 1
    return found


def _trimmed(code, a, b):
    while a < b and code[a].isspace():
        a += 1
    while b > a and code[b - 1].isspace():
        b -= 1
    return a, b


def _simple_operand(s):
    """True when `s` can take a ` - 1` or ` + 1` appended without brackets changing its meaning."""
    depth = 0
    for k, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and (c in "&|^?" or s[k:k + 2] in ("<<", ">>")):
            return False
    return True
