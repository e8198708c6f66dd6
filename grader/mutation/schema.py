"""Mutant schemata: many mutants compiled into one source, each switched on at run time.

Compiling a lesson's reference takes 7-25 s on the emulator's instrumented build, longer than
grading a mutant the grader kills at its first case. A *schema* holds every mutant of a set at
once: the place each one edits is wrapped in a switch on `__wb_mutant`, a value read once, when
the library loads, from the environment variable WORKBOOK_MUTANT (0, or unset: the reference).
One compile then serves every mutant of the set; grading mutant K runs the grader with
WORKBOOK_MUTANT=K.

  an expression   `a < b`              -> `(__wb_mutant == K ? (a <= b) : (a < b))`
  a statement     `m += v;`            -> `{ if (__wb_mutant == K) { atomicAdd(&m, v); } else { m += v; } }`

Mutants whose switched places overlap share one switch (one arm each); an arm replacing a `&&`/`||`
chain is cast to bool (a chain with a term dropped may be a lone pointer). The switch is code that
runs: an edit inside a constant expression (`if constexpr`, a `constexpr` value, a template argument
that must stay one) cannot be switched. Those `place_of` recognises are left out at once; the others
make the schema fail to compile, and `split_failures` reads the compiler's error lines and takes the
switches on those lines out. A mutant left out is compiled on its own, as without schemata.

No line is added or removed: the reference's text keeps its lines (the declaration of `__wb_mutant`
shares line 1, a comment in every reference) and each mutated copy is written on the first line of
its place, so the grader's reports name the reference's own lines.
"""
import re
from dataclasses import dataclass, field

from .cxx_source import Source, _split_top, expression_bounds

ENV = "WORKBOOK_MUTANT"
COVERAGE_ENV = "WORKBOOK_MUTANT_COVERAGE"
VAR = "__wb_mutant"
MAX_MUTANTS = 8192
# Line 1 of the schema starts with this (the reference's line 1 follows it on the same line). Nothing is
# included (line 1 holds a comment's start in every reference): open and pwrite are declared as glibc
# declares them. In coverage mode (WORKBOOK_MUTANT_COVERAGE=FILE) byte K of FILE is set to 1 the first time
# mutant K is *infected*: its arm's value differs from the reference's there, or, for an arm that cannot
# be evaluated beside the reference's (a call, a memory access), its place is reached. pwrite reaches the
# file at once: the grader ends with _Exit, which runs no destructor.
PRELUDE = (
    'extern "C" char* getenv(const char*) noexcept; extern "C" int open(const char*, int, ...); '
    'extern "C" long pwrite(int, const void*, unsigned long, long); '
    f'static const int {VAR} = [] {{ const char* s = getenv("{ENV}"); int k = 0; '
    "for (; s && *s >= '0' && *s <= '9'; ++s) k = 10 * k + (*s - '0'); return k; }(); "
    f'static const int __wb_cover_fd = [] {{ const char* f = getenv("{COVERAGE_ENV}"); '
    "return f && *f ? open(f, 0102, 0644) : -1; }(); "
    "static const bool __wb_cover = __wb_cover_fd >= 0; "
    f"static unsigned char __wb_seen[{MAX_MUTANTS}]; "
    "static void __wb_hit(int k) { if (!__atomic_exchange_n(&__wb_seen[k], 1, __ATOMIC_RELAXED)) "
    '(void)pwrite(__wb_cover_fd, "\\1", 1, k); } '
    "template <class... K> static void __wb_hits(K... k) { (__wb_hit(k), ...); } "
    "template <class T, class U, class = void> struct __wb_eq { static bool differs(const T&, const U&) { return true; } }; "
    "template <class T, class U> struct __wb_eq<T, U, decltype(void(bool(*(const T*)nullptr == *(const U*)nullptr)))> "
    "{ static bool differs(const T& a, const U& b) { return !(a == b); } }; "
    "template <class T> static T __wb_cmp(T v) { return v; } "
    "template <class T, class U, class... R> static T __wb_cmp(T v, int k, const U& arm, const R&... rest) "
    "{ if (__wb_eq<T, U>::differs(v, arm)) __wb_hit(k); return __wb_cmp<T>(v, rest...); } "
)


@dataclass
class Switch:
    """One switched place of the source: `start`..`end`, an expression, a statement or the condition of
    an `if constexpr`, and the mutants (id, mutant) whose edits fall inside it. `scope_end`: where the
    code the switch can break ends (an `if constexpr`'s branches, now compiled for every instantiation)."""
    start: int
    end: int
    kind: str  # "expr", "stmt" or "cond"
    members: list = field(default_factory=list)
    scope_end: int = 0


def _statement_bounds(src, start, end):
    """The simple statement (up to and with its `;`) around start..end, or None when the edit is not
    inside one at block level (a for header, a parameter list, a statement holding a block)."""
    code, match = src.code, src.match
    i = start - 1
    while i >= 0:
        c = code[i]
        if c in ";{}":
            break
        if c in ")]" and i in match:
            i = match[i] - 1
            continue
        if c in "([":
            return None
        i -= 1
    a = i + 1
    j = end
    n = len(code)
    while j < n:
        c = code[j]
        if c in "([" and j in match:
            j = match[j] + 1
            continue
        if c == ";":
            break
        if c in ")]{}":
            return None
        j += 1
    if j >= n:
        return None
    b = j + 1
    while a < b and code[a].isspace():
        a += 1
    return a, b


def _template_open_at(code, i):
    """A `<` that opens template arguments: glued to the name before it (the sources are formatted
    so that a comparison has a space on each side), and not `<<` or `<=`."""
    return (code[i] == "<" and i > 0 and (code[i - 1].isalnum() or code[i - 1] == "_")
            and code[i + 1:i + 2] not in ("<", "=", " "))


def _template_depth(code, a, b):
    depth = 0
    for i in range(a, b):
        if _template_open_at(code, i):
            depth += 1
        elif depth and code[i] == ">" and code[i - 1:i] != "-" and code[i + 1:i + 2] != "=":
            depth -= 1
    return depth


def _balanced(src, a, b):
    """Moves b right until no template argument list is left open inside a..b (the expression bounds
    stop at the commas between template arguments); None when a statement ends first."""
    code, match = src.code, src.match
    for _ in range(8):
        depth = _template_depth(code, a, b)
        if depth == 0:
            return a, b
        j = b
        while j < len(code) and depth > 0:
            c = code[j]
            if c in "([" and j in match:
                j = match[j] + 1
                continue
            if c in ";{}":
                return None
            if _template_open_at(code, j):
                depth += 1
            elif c == ">" and code[j + 1:j + 2] != "=":
                depth -= 1
            j += 1
        b = expression_bounds(src, j)[1] if j < len(code) and code[j] not in ";,)]}" else j
        b = max(b, j)
    return None


_CONTROL_HEADER = re.compile(r"\b(?:if|while|for|switch)\s*(?:constexpr\s*)?\(")


def _after_control_header(src, a, start):
    """`a` moved past the header of an `if (C)` / `while (C)` / ... that ends between a and start: the
    expression bounds walk over a bracket pair and its keyword, so for the body of a control statement
    written without braces (`if constexpr (C) __syncthreads();`) they begin at the keyword."""
    code = src.code
    for m in _CONTROL_HEADER.finditer(code, a, start):
        close = src.match.get(m.end() - 1)
        if close is not None and close < start:
            a = close + 1
            while a < start and code[a].isspace():
                a += 1
    return a


def _expression_region(src, start, end):
    """The smallest expression the expression bounds give that holds start..end: the operand or
    condition around the edit, or, for an edit across arguments, the whole call."""
    a, b = expression_bounds(src, start)
    a = _after_control_header(src, a, start)
    balanced = _balanced(src, a, b) if a < b else None
    if balanced:
        a, b = balanced
    if a <= start and end <= b and a < b and balanced:
        return a, b
    code, match = src.code, src.match
    # The innermost bracket pair holding the whole edit; the expression around that bracket.
    i = start - 1
    depth_open = None
    while i >= 0:
        c = code[i]
        if c in ";{}":
            return None
        if c in ")]" and i in match:
            i = match[i] - 1
            continue
        if c in "([" and i in match:
            if match[i] >= end:
                depth_open = i
                break
        i -= 1
    if depth_open is None:
        return None
    a, b = expression_bounds(src, depth_open)
    a = _after_control_header(src, a, depth_open)
    balanced = _balanced(src, a, b) if a < b else None
    if balanced and balanced[0] <= start and end <= balanced[1]:
        return balanced
    return None


# A place in a constant expression: the condition of `if constexpr`, or a `constexpr` declaration (its
# value is needed while compiling). Known before compiling, so no compile is spent finding them.
_CONSTANT_STATEMENT = re.compile(r"\bconstexpr\b|\bstatic_assert\b|\bcase\b|\btemplate\b|\balignas\b")


def _in_constant_context(src, start):
    code = src.code
    i = start - 1
    while i >= 0 and code[i] not in ";{}":
        i -= 1
    begin = i + 1
    # `if constexpr (C) statement;` with no braces: the statement after the condition is ordinary code,
    # run when C holds; only the condition is a constant expression (a place of its own, `place_of`).
    for m in _IF_CONSTEXPR.finditer(code, begin, start):
        close = src.match.get(m.end() - 1)
        if close is not None and close < start:
            begin = max(begin, close + 1)
    return _CONSTANT_STATEMENT.search(code, begin, start) is not None


_IF_CONSTEXPR = re.compile(r"\bif\s+(constexpr)\s*\(")


def _if_constexpr_condition(src, start, end):
    """For an edit inside the condition of an `if constexpr`: (start of `constexpr`, end of the condition's
    `)`), else None."""
    code, match = src.code, src.match
    i = start - 1
    while i >= 0 and code[i] not in ";{}":
        i -= 1
    for m in _IF_CONSTEXPR.finditer(code, i + 1, start):
        close = match.get(m.end() - 1)
        if close is not None and m.end() - 1 < start and end <= close:
            return m.start(1), close + 1
    return None


def _if_scope_end(src, close):
    """The end of the branches of the `if` whose condition closes at `close`: its block and the blocks
    of an `else` / `else if` chain after it."""
    code, match = src.code, src.match
    end = close + 1
    while True:
        j = end
        while j < len(code) and code[j].isspace():
            j += 1
        if code.startswith("else", j) and not (j + 4 < len(code) and (code[j + 4].isalnum() or code[j + 4] == "_")):
            j += 4
            while j < len(code) and code[j].isspace():
                j += 1
            m = _IF_CONSTEXPR.match(code, j) or re.compile(r"if\s*\(").match(code, j)
            if m:
                close2 = match.get(m.end() - 1)
                if close2 is None:
                    return end
                end = close2 + 1
                continue
        if j < len(code) and code[j] == "{" and j in match:
            end = match[j] + 1
            # a block, then possibly an else
            k = end
            while k < len(code) and code[k].isspace():
                k += 1
            if code.startswith("else", k):
                continue
            return end
        if j < len(code) and code[j] != "{":
            semi = code.find(";", j)
            return semi + 1 if semi >= 0 else end
        return end


def place_of(src, mutant):
    """(start, end, kind) of the place that switches `mutant`, or None when there is none (the edit
    is in a constant expression, or in no expression or simple statement).

    The condition of an `if constexpr` is a place of its own kind (`_edits`: a branch is compiled where the
    reference or a mutant takes it; where one does not compile, the syntax check names its line and the
    mutants are compiled alone)."""
    cond = _if_constexpr_condition(src, mutant.start, mutant.end)
    if cond:
        return cond[0], cond[1], "cond"
    if _in_constant_context(src, mutant.start):
        return None
    region = _expression_region(src, mutant.start, mutant.end)
    if region and not _crosses_statement(src.code, *region):
        return region[0], region[1], "expr"
    region = _statement_bounds(src, mutant.start, mutant.end)
    if region and _simple_statement(src, *region):
        return region[0], region[1], "stmt"
    return None


def _simple_statement(src, a, b):
    """True for a statement a..b that can stand alone inside braces: no block in it, no `;` but its
    own outside brackets (a for header's are inside), no preprocessor line, not an `else` or `case` part."""
    code, match = src.code, src.match
    if "{" in code[a:b] or "}" in code[a:b] or "#" in src.text[a:b]:
        return False
    if re.match(r"(else|case|default|do)\b", code[a:b]):
        return False
    i = a
    while i < b - 1:
        if code[i] in "([" and i in match:
            i = match[i] + 1
            continue
        if code[i] == ";":
            return False
        i += 1
    return True


def _crosses_statement(code, a, b):
    return ";" in code[a:b] or "{" in code[a:b] or "}" in code[a:b]


def switches(text, numbered):
    """The switches for `numbered`, a list of (id, mutant) with ids > 0: overlapping places merged
    into one. Returns (switches, unplaced), unplaced the (id, mutant) pairs with no place."""
    src = Source(text)
    places = []
    unplaced = []
    for k, m in numbered:
        p = place_of(src, m)
        if p is None:
            unplaced.append((k, m))
        else:
            places.append((p, k, m))
    places.sort(key=lambda x: (x[0][0], -x[0][1]))
    merged = []
    for (a, b, kind), k, m in places:
        if merged and a < merged[-1].end:
            s = merged[-1]
            s.end = max(s.end, b)
            if kind == "stmt" or (kind == "cond" and s.kind != "stmt"):
                s.kind = kind
                s.start = min(s.start, a)
            s.members.append((k, m))
        else:
            merged.append(Switch(a, b, kind, [(k, m)]))
    for s in merged:
        s.scope_end = _if_scope_end(src, s.end - 1) if s.kind == "cond" else s.end
    # A merged place made of an expression and a statement is the statement: re-check that the
    # union still ends a statement, else leave it as the expression it is.
    for s in merged:
        if s.kind == "stmt" and not text[s.start:s.end].rstrip().endswith(";"):
            s.kind = "expr"
    return merged, unplaced


def strip_comments(text):
    """`text` with its comments turned into spaces (string and character literals kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _one_line(code):
    return " ".join(strip_comments(code).split())


def _is_logical(src, a, b):
    """True when the expression a..b is a `&&` / `||` chain at its top level (its value is a bool)."""
    return bool(_split_top(src.code, a, b, src.match, "&&") or _split_top(src.code, a, b, src.match, "||"))


_CALL = re.compile(r"[\w>]\s*\(")
_CASTS = re.compile(r"\b(?:static_cast|reinterpret_cast|const_cast|sizeof|alignof|decltype)\s*<[^;]*?>\s*\(|"
                    r"\b(?:sizeof|alignof|decltype)\s*\(")


def pure(code):
    """True when the expression `code` (masked, one line) can be evaluated beside the reference's with no
    effect: no call (casts and sizeof aside), no memory access (`[`, `->`, unary `*`), no assignment,
    increment or decrement, no division or remainder by a variable (a mutant's zero would trap)."""
    code = _CASTS.sub(" (", code)
    if _CALL.search(code) or "[" in code or "->" in code or "++" in code or "--" in code:
        return False
    if re.search(r"\*(?!\s)", code.replace("*=", "")) or re.search(r"[/%]\s*(?![\d\s])|[/%]\s+(?!\d)", code):
        return False
    return re.search(r"(?<![=!<>])=(?!=)", code) is None


def _coverage_tail(s, arms, original_line, is_pure):
    """What the reference's branch evaluates in coverage mode: its value compared with each arm's, or, where
    that cannot be done, a note that the place was reached."""
    keys = ", ".join(str(k) for k, _ in arms)
    if is_pure:
        pairs = ", ".join(f"{k}, ({code})" for k, code in arms)
        return f"__wb_cover ? __wb_cmp(({original_line}), {pairs}) : "
    return f"__wb_cover ? (__wb_hits({keys}), ({original_line})) : "


def render(text, s, src=None):
    """The switch `s` as source: every member's arm on the place's first line, the coverage branch, then
    the reference's own text of the place, with its lines."""
    original = text[s.start:s.end]
    if s.kind == "cond":
        # `constexpr (C)` -> `(K ? (static_cast<bool>(C')) : (C))`: a plain if, the keyword dropped.
        open_at = text.index("(", s.start)
        arms = []
        for k, m in s.members:
            mutated = text[open_at + 1:m.start] + m.replacement + text[m.end:s.end - 1]
            arms.append((k, f"static_cast<bool>({_one_line(mutated)})"))
        cond = text[open_at + 1:s.end - 1]
        line = f"static_cast<bool>({_one_line(cond)})"
        is_pure = src is None or pure(_one_line(src.code[open_at + 1:s.end - 1]))
        head = "".join(f"{VAR} == {k} ? ({code}) : " for k, code in arms)
        return f"{' ' * (open_at - s.start)}({head}{_coverage_tail(s, arms, line, is_pure)}({cond}))"
    # A chain with a term dropped may be a lone pointer or number: the chain it replaces is a bool.
    as_bool = s.kind == "expr" and src is not None and _is_logical(src, s.start, s.end)
    arms = []
    masked = [] if src is None else [_one_line(src.code[s.start:s.end])]
    for k, m in s.members:
        mutated = _one_line(text[s.start:m.start] + m.replacement + text[m.end:s.end])
        arms.append((k, f"static_cast<bool>({mutated})" if as_bool else mutated))
        masked.append(_one_line(m.replacement))
    if s.kind == "expr":
        is_pure = src is not None and all(pure(c) for c in masked)
        line = f"static_cast<bool>({_one_line(original)})" if as_bool else _one_line(original)
        head = "".join(f"{VAR} == {k} ? ({code}) : " for k, code in arms)
        return f"({head}{_coverage_tail(s, arms, line, is_pure)}({original}))"
    keys = ", ".join(str(k) for k, _ in arms)
    head = "".join(f"if ({VAR} == {k}) {{ {code} }} else " for k, code in arms)
    return f"{{ {head}{{ if (__wb_cover) __wb_hits({keys}); {original} }} }}"


def _constexpr_branches(src, s):
    """For a `cond` switch whose `if constexpr (C)` is followed by a block: (position of `if`, the
    `else` keyword's span or None, the end of the whole if/else chain); None for any other shape."""
    code, match = src.code, src.match
    i = s.start - 1
    while i >= 0 and code[i].isspace():
        i -= 1
    if i < 1 or code[i - 1:i + 1] != "if" or (i >= 2 and (code[i - 2].isalnum() or code[i - 2] == "_")):
        return None
    j = s.end
    while j < len(code) and code[j].isspace():
        j += 1
    if j >= len(code) or code[j] != "{" or j not in match:
        return None
    k = match[j] + 1
    while k < len(code) and code[k].isspace():
        k += 1
    has_else = code.startswith("else", k) and not (code[k + 4:k + 5].isalnum() or code[k + 4:k + 5] == "_")
    return i - 1, ((k, k + 4) if has_else else None), _if_scope_end(src, s.end - 1)


def _edits(text, s, src):
    """The edits (start, end, new text) that switch `s`. The condition of an `if constexpr` followed by a
    block stays a constant where it can:

      if constexpr (C) {A} else B   ->   { if constexpr (C || C') if (SEL) {A} if constexpr (!(C && C')) if (!SEL) B }

    SEL being the run-time switch between C and each mutant's C'. A branch is then compiled only for the
    instantiations where the reference or a mutant takes it, as each compiled alone would; other shapes
    become a plain `if` (both branches compiled for every instantiation)."""
    shape = _constexpr_branches(src, s) if s.kind == "cond" and src is not None else None
    if shape is None:
        return [(s.start, s.end, render(text, s, src))]
    if_at, else_span, end = shape
    open_at = text.index("(", s.start)
    conds = [_one_line(text[open_at + 1:s.end - 1])]
    conds += [_one_line(text[open_at + 1:m.start] + m.replacement + text[m.end:s.end - 1]) for _, m in s.members]
    any_true = " || ".join(f"static_cast<bool>({c})" for c in conds)
    all_true = " && ".join(f"static_cast<bool>({c})" for c in conds)
    sel = render(text, s, src).lstrip()
    edits = [(if_at, s.end, f"{{ if constexpr ({any_true}) if {sel}")]
    if else_span:
        sel_line = _one_line(sel)
        edits.append((else_span[0], else_span[1], f"if constexpr (!({all_true})) if (!{sel_line})"))
    edits.append((end, end, " }"))
    return edits


def build(text, placed):
    """The schema source of the switches `placed` (sorted, not overlapping)."""
    src = Source(text)
    edits = sorted((e for s in placed for e in _edits(text, s, src)), key=lambda e: (e[0], e[1]))
    out = []
    at = 0
    for start, end, new in edits:
        assert start >= at, "the edits of a schema do not overlap"
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    body = "".join(out)
    assert body.count("\n") == text.count("\n"), "a schema keeps the reference's lines"
    return PRELUDE + body


def lines_of(text, s):
    """The source lines (1-based, inclusive) a switch covers: its place, and for the condition of an
    `if constexpr` the branches it now compiles for every instantiation."""
    end = max(s.end, s.scope_end)
    return text.count("\n", 0, s.start) + 1, text.count("\n", 0, max(s.start, end - 1)) + 1


_ERROR_LINE = re.compile(r":(\d+):(?:\d+:)? (?:fatal )?error:")


def error_lines(output, name):
    """Line numbers of the compiler's errors in the file whose path ends with `name`. When some error
    says the switch itself is not a constant, only those: the errors that follow from them (a template
    argument that is no longer a constant, on a line of its own) would blame innocent switches."""
    found, constant = set(), set()
    for line in output.splitlines():
        head = line.split(": ", 1)[0]
        if name not in head:
            continue
        m = _ERROR_LINE.search(line)
        if m:
            found.add(int(m.group(1)))
            if VAR in line:
                constant.add(int(m.group(1)))
    return constant or found


_CONTEXT_LINE = re.compile(r":(\d+):\d+:\s+required (?:from|by)")


def context_lines(output, name):
    """Line numbers of the schema file in the compiler's instantiation contexts ("required from ..."):
    an error inside a template made to fail by a switch elsewhere (a branch of an `if constexpr` now
    compiled for a type it was not written for) names the switch only there."""
    found = set()
    for line in output.splitlines():
        if name in line.split(": ", 1)[0]:
            m = _CONTEXT_LINE.search(line)
            if m:
                found.add(int(m.group(1)))
    return found


def split_failures(text, placed, output, name):
    """After a failed compile of the schema of `placed`: (kept, dropped), `dropped` the switches on a
    line the compiler's errors name or, failing that, on a line of their instantiation contexts;
    (None, []) when neither names one (the caller halves the set)."""
    context = context_lines(output, name)
    # Only an `if constexpr` made plain instantiates new code: in the contexts, blame those first.
    tries = ((error_lines(output, name), ("expr", "stmt", "cond")), (context, ("cond",)),
             (context, ("expr", "stmt", "cond")))
    for bad, kinds in tries:
        kept, dropped = [], []
        for s in placed:
            first, last = lines_of(text, s)
            (dropped if s.kind in kinds and any(first <= b <= last for b in bad) else kept).append(s)
        if dropped:
            return kept, dropped
    return None, []
