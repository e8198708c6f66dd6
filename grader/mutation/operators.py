"""Source-level mutation operators for the lessons' reference solutions.

Each operator reads one C++/CUDA source and proposes edits; every edit replaces ONE span of the
source (`start`..`end`) with new text, so a mutant differs from the reference at one place.
The operators work on a masked copy of the source (comments, string and character literals,
preprocessor lines, `static_assert(...)` and `__launch_bounds__(...)` blanked out, offsets
kept), so nothing inside those is ever mutated. The code this project ships is clang-formatted:
a binary operator has a space on each side, a template's angle brackets do not, and the
operators rely on that to tell `a < b` from `Pack<T, VEC>`.

`enumerate_mutants(text)` is deterministic: the same source gives the same mutants in the same
order with the same names, `<operator>@<line>`, and `<operator>@<line>.<k>` for the k-th
(k >= 2) mutant of one operator on one line, counted from the left.
"""
import re

from .cxx_source import (  # noqa: F401  (Source, Edit, Mutant and mask are part of this module's interface)
    Edit,
    Mutant,
    Source,
    _CLOSE,
    _OPEN,
    _WORD,
    _change,
    _comparisons,
    _is_template_close,
    _is_word_char,
    _simple_operand,
    _split_top,
    _trimmed,
    expression_bounds,
    mask,
)


# --------------------------------------------------------------------------------------------
# The operators

def op_flip_comparison(src):
    """`<` ↔ `<=`, `>` ↔ `>=`, `==` ↔ `!=`."""
    flips = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
    for i, op in _comparisons(src.code):
        a, _ = expression_bounds(src, i, stop_at_logical=True, stop_at_comparison=True)
        _, b = expression_bounds(src, i + len(op), stop_at_logical=True, stop_at_comparison=True)
        yield Edit(i, i + len(op), flips[op], _change(src, a, b, i, i + len(op), flips[op]))


def op_drop_term(src):
    """Drop one term of a `&&` or `||` chain (an alignment, overlap, range or guard check)."""
    code, match = src.code, src.match
    seen = set()
    for m in re.finditer(r"(?<=\s)(&&|\|\|)(?=\s)", code):
        region = expression_bounds(src, m.start())
        if region in seen:
            continue
        seen.add(region)
        a, b = region
        ors = _split_top(code, a, b, match, "||")
        disjuncts = []
        start = a
        for k in ors + [b]:
            disjuncts.append(_trimmed(code, start, k))
            start = k + 2
        if len(disjuncts) > 1:
            yield from _drop_each(src, disjuncts, "||")
        for da, db in disjuncts:
            ands = _split_top(code, da, db, match, "&&")
            if not ands:
                continue
            conjuncts = []
            start = da
            for k in ands + [db]:
                conjuncts.append(_trimmed(code, start, k))
                start = k + 2
            yield from _drop_each(src, conjuncts, "&&")


def _drop_each(src, terms, op):
    for k, (ta, tb) in enumerate(terms):
        if k == 0:
            start, end = ta, terms[1][0]  # "t0 && " up to the next term
        else:
            start, end = terms[k - 1][1], tb  # " && tk" from the end of the previous term
        yield Edit(start, end, "",
                   f"drop `{src.snippet(ta, tb)}` from a `{op}` chain (term {k + 1} of {len(terms)})")


def op_off_by_one(src):
    """Drop a `+ 1` or `- 1`: a span, count or last index one element off."""
    code = src.code
    for m in re.finditer(r"\s([+-]) 1(?![\w.'])", code):
        k = m.start()
        while k > 0 and code[k - 1].isspace():
            k -= 1
        prev = code[k - 1] if k > 0 else ""
        if not (_is_word_char(prev) or prev in ")]"):
            continue  # a unary sign, not a binary `x - 1`
        a, _ = expression_bounds(src, m.start(1), stop_at_logical=True, stop_at_comparison=True)
        if a > k:
            a = k
        left = src.snippet(a, k)
        op = m.group(1)
        yield Edit(k, m.end(), "", f"`{left} {op} 1` → `{left}`")


_FOR = re.compile(r"\bfor\s*\(")


def op_loop_bound(src):
    """A `for` loop's bound moved in by one: `i < n` → `i < n - 1`, `k > 0` → `k > 1`."""
    code, match = src.code, src.match
    for m in _FOR.finditer(code):
        open_at = m.end() - 1
        close_at = match.get(open_at)
        if close_at is None:
            continue
        semis = [i for i in range(open_at + 1, close_at) if code[i] == ";" and _depth_zero(code, match, open_at, i)]
        if len(semis) != 2:
            continue  # a range-for
        ca, cb = semis[0] + 1, semis[1]
        for i, op in _comparisons(code, ca, cb):
            if not _depth_zero(code, match, open_at, i):
                continue
            ra = i + len(op)
            ends = [k for k in _split_top(code, ra, cb, match, "&&") + _split_top(code, ra, cb, match, "||")]
            rb = min(ends) if ends else cb
            ra, rb = _trimmed(code, ra, rb)
            rhs = src.text[ra:rb]
            la, _ = expression_bounds(src, i, stop_at_logical=True, stop_at_comparison=True)
            lhs = src.snippet(la, i)
            delta = -1 if op in ("<", "<=") else 1
            if re.fullmatch(r"\d+", rhs):
                new = str(int(rhs) + delta)
            else:
                body = rhs if _simple_operand(code[ra:rb]) else f"({rhs})"
                new = f"{body} {'-' if delta < 0 else '+'} 1"
            yield Edit(ra, rb, new, f"loop `{lhs} {op} {src.snippet(ra, rb)}` ends one step early (`{op} {new}`)")


def _depth_zero(code, match, open_at, i):
    """True when offset i is directly inside the bracket at open_at (no other bracket between)."""
    k = open_at + 1
    while k < i:
        if code[k] in _OPEN and k in match:
            if match[k] >= i:
                return False
            k = match[k] + 1
            continue
        k += 1
    return True


def op_no_saturation(src):
    """`__NV_SATFINITE` → `__NV_NOSAT`: an fp8 conversion that makes NaN past ±448."""
    for m in re.finditer(r"\b__NV_SATFINITE\b", src.code):
        yield Edit(m.start(), m.end(), "__NV_NOSAT", "fp8 conversion without saturation (`__NV_NOSAT`)")


_STRIDE_ARG = re.compile(r"[A-Za-z_]\w*(?:(?:\.|->)[A-Za-z_]\w*)*(?:\[[^\[\]]*\])?")


def _is_stride_name(arg):
    if not _STRIDE_ARG.fullmatch(arg):
        return False
    last = re.split(r"\.|->", re.sub(r"\[.*\]$", "", arg))[-1]
    return "stride" in last.lower() or re.fullmatch(r"(?:\w+_)?s\d", last) is not None


def op_swap_strides(src):
    """Swap two stride arguments of one call (or braced initialiser)."""
    code, match = src.code, src.match
    for open_at in sorted(k for k, v in match.items() if code[k] in "({" and v > k):
        close_at = match[open_at]
        commas = [k for k in range(open_at + 1, close_at)
                  if code[k] == "," and _depth_zero(code, match, open_at, k) and not _inside_template(code, open_at, k)]
        if not commas or ";" in code[open_at + 1:close_at]:
            continue  # a block, a struct's members or a for header: not an argument list
        args = []
        start = open_at + 1
        for k in commas + [close_at]:
            args.append(_trimmed(code, start, k))
            start = k + 1
        strides = [(a, b) for a, b in args if _is_stride_name(src.text[a:b])]
        for x in range(len(strides)):
            for y in range(x + 1, len(strides)):
                (xa, xb), (ya, yb) = strides[x], strides[y]
                first, second = src.text[xa:xb], src.text[ya:yb]
                if first == second:
                    continue
                replacement = second + src.text[xb:ya] + first
                yield Edit(xa, yb, replacement, f"swap the stride arguments `{first}` and `{second}`")


def _inside_template(code, open_at, k):
    """True when offset k sits inside `<...>` template brackets that open after open_at."""
    depth = 0
    for i in range(open_at + 1, k):
        c = code[i]
        if c == "<" and i > 0 and not code[i - 1].isspace() and code[i + 1:i + 2] not in ("<", "=") \
                and code[i - 1] != "<":
            depth += 1
        elif c == ">" and depth > 0 and _is_template_close(code, i):
            depth -= 1
    return depth > 0


_SYNCS = re.compile(
    r"\b__syncthreads\s*\(\s*\)"
    r"|\b__syncwarp\s*\([^()]*\)"
    r"|\b(?:cg|cooperative_groups)::sync\s*\([^()]*\)"
    r"|\bcudaGridDependencySynchronize\s*\(\s*\)"
    r"|\b__threadfence(?:_block|_system)?\s*\(\s*\)"
    r"|\b[A-Za-z_][\w:]*(?:\s*\(\s*\))?\s*\.\s*sync\s*\(\s*\)")


def op_drop_sync(src):
    """Drop a barrier: `__syncthreads()`, `__syncwarp()`, a cluster or group `.sync()`, a fence,
    or the programmatic-launch wait `cudaGridDependencySynchronize()`."""
    for m in _SYNCS.finditer(src.code):
        after = src.code[m.end():].lstrip()
        if not after.startswith(";"):
            continue  # a value (never the case for these) or part of a larger expression
        yield Edit(m.start(), m.end(), "(void)0", f"drop `{src.snippet(m.start(), m.end())}`")


_WARP_SYNC_CALL = re.compile(r"\b__(?:shfl(?:_xor|_down|_up)?|ballot|any|all|match_any|match_all|reduce_\w+)_sync\s*\(")
_FULL_MASK = re.compile(r"0x[fF]{8}[uU]?")


def _call_args(src, open_at):
    code, match = src.code, src.match
    close_at = match.get(open_at)
    if close_at is None:
        return []
    args = []
    start = open_at + 1
    for k in range(open_at + 1, close_at + 1):
        if k == close_at or (code[k] == "," and _depth_zero(code, match, open_at, k)):
            args.append(_trimmed(code, start, k))
            start = k + 1
    return args


def op_shuffle_mask(src):
    """A warp intrinsic's full mask `0xffffffff` → `0x0000ffff`: lanes 16-31 left out."""
    for m in _WARP_SYNC_CALL.finditer(src.code):
        args = _call_args(src, m.end() - 1)
        if not args:
            continue
        a, b = args[0]
        if _FULL_MASK.fullmatch(src.text[a:b]):
            name = src.code[m.start():m.end() - 1].strip()
            yield Edit(a, b, "0x0000ffffu", f"`{name}` mask names lanes 0-15 only (`0x0000ffffu`)")


def op_shuffle_offset(src):
    """A shuffle's offset halved (`__shfl_xor_sync(m, v, offset)` → `offset / 2`: the butterfly
    never crosses its widest distance), or a broadcast's source lane one off (`0` → `1`)."""
    for m in re.finditer(r"\b__shfl(_xor|_down|_up)?_sync\s*\(", src.code):
        args = _call_args(src, m.end() - 1)
        if len(args) < 3:
            continue
        a, b = args[2]
        old = src.text[a:b]
        literal = re.fullmatch(r"\d+", old)
        if m.group(1):
            # xor with offset + 1 would still be a basis of the lane bits (every lane gets the
            # whole sum, in another order): halving drops the highest bit instead.
            new = str(int(old) // 2) if literal else (f"{old} / 2" if _WORD.fullmatch(old) else f"({old}) / 2")
            what = "offset"
        else:
            new = str(int(old) + 1) if literal else (f"{old} + 1" if _simple_operand(src.code[a:b]) else f"({old}) + 1")
            what = "source lane"
        name = src.code[m.start():m.end() - 1].strip()
        yield Edit(a, b, new, f"`{name}` {what} `{old}` → `{new}`")


_FLOAT_DECL = re.compile(r"\b(?:float|double)\s+(?=[A-Za-z_])")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)[fFuUlL]*")
_KEYWORDS = {"return", "const", "constexpr", "static", "auto", "if", "else", "for", "while", "float", "double",
             "int", "unsigned", "sizeof", "true", "false", "nullptr"}


def _float_variables(src):
    """(offset, name) of every float or double variable or parameter declared in the file."""
    code, match = src.code, src.match
    found = []
    for m in _FLOAT_DECL.finditer(code):
        i = m.end()
        # One declaration: `float a = 1, b;` or a parameter `float eps` (up to `,` or `)`).
        is_param = False
        k = m.start() - 1
        while k >= 0 and code[k].isspace():
            k -= 1
        while k >= 0 and _is_word_char(code[k]):  # `const float`
            k2 = k
            while k2 >= 0 and _is_word_char(code[k2]):
                k2 -= 1
            if code[k2 + 1:k + 1] not in ("const", "constexpr", "static", "volatile"):
                break
            k = k2
            while k >= 0 and code[k].isspace():
                k -= 1
        if k >= 0 and code[k] in "(,":
            is_param = True
        name = _WORD.match(code, i)
        if not name or name.group(0) in _KEYWORDS:
            continue
        after = code[name.end():].lstrip()[:1]
        if after == "(":
            continue  # a function returning float
        if is_param:
            found.append((name.start(), name.group(0)))
            continue
        if after not in ("=", ";", ",", "{"):
            continue  # arrays are not values a guard could test
        found.append((name.start(), name.group(0)))
        # Further names of the same declaration, after depth-0 commas up to the `;`.
        j = name.end()
        while j < len(code) and code[j] != ";":
            c = code[j]
            if c in _OPEN and j in match:
                j = match[j] + 1
                continue
            if c in ")}":
                break
            if c == ",":
                nxt = _WORD.match(code, j + 1 + len(code[j + 1:]) - len(code[j + 1:].lstrip()))
                if nxt and nxt.group(0) not in _KEYWORDS and code[nxt.end():].lstrip()[:1] != "[":
                    found.append((nxt.start(), nxt.group(0)))
            j += 1
    return found


def _scope_end(src, pos):
    """Where the scope that holds a declaration at `pos` ends: its block's `}` (or a parameter
    list's function body's `}`)."""
    code, match = src.code, src.match
    # Innermost unmatched `(` or `{` before pos.
    i = pos - 1
    while i >= 0:
        c = code[i]
        if c in _CLOSE and i in match:
            i = match[i] - 1
            continue
        if c == "{":
            return match.get(i, len(code))
        if c == "(":
            # A parameter list: the scope is the function body that follows it.
            close = match.get(i)
            if close is None:
                return len(code)
            body = code.find("{", close)
            semi = code.find(";", close)
            if body < 0 or (0 <= semi < body):
                return close  # a declaration, or a for-init: the parens' own span
            return match.get(body, len(code))
        i -= 1
    return len(code)


def op_guard_variable(src):
    """A guard that tests the wrong value: in `v OP literal` (v a float), v → another float in scope."""
    variables = _float_variables(src)
    scopes = [(pos, name, _scope_end(src, pos)) for pos, name in variables]
    code = src.code
    for i, op in _comparisons(code):
        la, _ = expression_bounds(src, i, stop_at_logical=True, stop_at_comparison=True)
        _, rb = expression_bounds(src, i + len(op), stop_at_logical=True, stop_at_comparison=True)
        left = _trimmed(code, la, i)
        right = _trimmed(code, i + len(op), rb)
        for (va, vb), (oa, ob) in ((left, right), (right, left)):
            # Strip the `(` of `!(eps >= 0.0f)`: the operand bounds stop at it already.
            name = src.text[va:vb]
            if not _WORD.fullmatch(name) or not _NUMBER.fullmatch(src.text[oa:ob]):
                continue
            if not any(n == name and p < va <= e for p, n, e in scopes):
                continue
            others = []
            for p, n, e in scopes:
                if n == name or not (p < va <= e) or any(n == o for o in others):
                    continue
                others.append(n)
            # Nearest declaration first: a guard's likely mix-up is a value computed just before.
            others.sort(key=lambda n: -max(p for p, nn, e in scopes if nn == n and p < va <= e))
            for other in others:
                yield Edit(va, vb, other, f"guard `{src.snippet(la, rb)}` tests `{other}` instead of `{name}`")


def op_swap_constant(src):
    """Constant `0.0f` ↔ `1.0f`."""
    for m in re.finditer(r"(?<![\w.])([01])\.0?f\b", src.code):
        new = "1.0f" if m.group(1) == "0" else "0.0f"
        a = src.text.rfind("\n", 0, m.start()) + 1
        b = src.text.find("\n", m.end())
        yield Edit(m.start(), m.end(), new, f"`{src.text[m.start():m.end()]}` → `{new}` in "
                   + _change(src, a, len(src.text) if b < 0 else b, m.start(), m.end(), new).split(" → ")[0])


_SHARED = re.compile(r"__shared__\s+[\w:<>, ]*?\b([A-Za-z_]\w*)\s*[\[;]")
_POINTER = re.compile(r"\b(?:float|double)\s*\*\s*(?:const\s+)?(?:__restrict__\s+)?([A-Za-z_]\w*)")
_MEMORY_REF = re.compile(r"\bfloat\s*&\s*([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*\[")


def op_atomic_sum(src):
    """An ordered sum into memory turned into atomics: `m += v;` → `atomicAdd(&m, v)`, and the
    fixed-turn `m = first ? v : m + v;` → the same with `atomicAdd` for the later turns."""
    code = src.code
    memory = {m.group(1) for m in _SHARED.finditer(code)} | {m.group(1) for m in _POINTER.finditer(code)}
    memory |= {m.group(1) for m in _MEMORY_REF.finditer(code) if m.group(2) in memory}

    def is_memory(lhs):
        base = re.match(r"([A-Za-z_]\w*)", lhs)
        if not base or base.group(1) not in memory:
            return False
        return lhs == base.group(1) and base.group(1) in {m.group(1) for m in _MEMORY_REF.finditer(code)} \
            or lhs.startswith(base.group(1) + "[")

    statement = re.compile(r"(?<=[;{}\s])([A-Za-z_][\w\[\]. +*/%-]*?)\s*(\+=|=)\s*([^;]+);")
    for m in statement.finditer(code):
        lhs = " ".join(src.text[m.start(1):m.end(1)].split())
        rhs = src.text[m.start(3):m.end(3)].strip()
        if not is_memory(lhs):
            continue
        if m.group(2) == "+=":
            yield Edit(m.start(1), m.end(3), f"atomicAdd(&{lhs}, {rhs})",
                       f"`{lhs} += …` made an atomicAdd (no fixed order)")
            continue
        t = re.fullmatch(r"(.+?)\s*\?\s*(.+?)\s*:\s*" + re.escape(lhs) + r"\s*\+\s*(.+)", rhs)
        if t and t.group(2) == t.group(3):
            cond, value = t.group(1), t.group(2)
            yield Edit(m.start(1), m.end(3), f"{cond} ? (void)({lhs} = {value}) : (void)atomicAdd(&{lhs}, {value})",
                       f"the ordered `{lhs} = {cond} ? … : {lhs} + …` made an atomicAdd")


# The operators, in the order a listing shows them; the name is what mutant names start with.
OPERATORS = [
    ("drop-term", op_drop_term),
    ("flip-cmp", op_flip_comparison),
    ("off-by-one", op_off_by_one),
    ("loop-bound", op_loop_bound),
    ("no-satfinite", op_no_saturation),
    ("swap-stride", op_swap_strides),
    ("drop-sync", op_drop_sync),
    ("shfl-mask", op_shuffle_mask),
    ("shfl-offset", op_shuffle_offset),
    ("atomic-sum", op_atomic_sum),
    ("guard-var", op_guard_variable),
    ("swap-const", op_swap_constant),
]
OPERATOR_NAMES = [name for name, _ in OPERATORS]


def operator_help():
    """One line per operator: its name and what it does."""
    return [(name, " ".join((fn.__doc__ or "").split())) for name, fn in OPERATORS]


def enumerate_mutants(text, operators=None):
    """Every mutant of `text`, in source order, named `<operator>@<line>[.<k>]`.

    Two edits that give the same mutated source are one mutant (the first operator in
    OPERATORS keeps it); an edit that changes nothing is dropped.
    """
    src = Source(text)
    order = {name: k for k, name in enumerate(OPERATOR_NAMES)}
    edits = []
    for name, fn in OPERATORS:
        if operators is not None and name not in operators:
            continue
        for e in fn(src):
            if text[e.start:e.end] == e.replacement:
                continue
            edits.append((name, len(edits), e))
    # Source order; one operator's edits at one place keep the order it proposed them in.
    edits.sort(key=lambda ne: (ne[2].start, ne[2].end, order[ne[0]], ne[1]))
    edits = [(name, e) for name, _, e in edits]
    seen = set()
    counts = {}
    mutants = []
    for name, e in edits:
        key = text[:e.start] + e.replacement + text[e.end:]
        if key in seen:
            continue
        seen.add(key)
        line = src.line_of(e.start)
        k = counts.get((name, line), 0) + 1
        counts[(name, line)] = k
        label = f"{name}@{line}" if k == 1 else f"{name}@{line}.{k}"
        mutants.append(Mutant(label, name, line, e.start, e.end, e.replacement, e.description))
    return mutants
