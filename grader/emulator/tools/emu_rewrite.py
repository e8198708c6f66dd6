#!/usr/bin/env python3
"""Rewrites a CUDA source so g++ compiles it against the emulator's headers.

Three constructs are not C++ and are rewritten; everything else is left alone, and no line
is added or removed, so the compiler's messages and the emulator's reports name the
learner's own lines:

  kernel<<<grid, block, smem, stream>>>(args)
      -> ::emu::TripleChevron(EMU_LAUNCH_MODE, grid, block, smem, stream)(
             [=](auto&&... emu_a) { kernel(emu_a...); }, args)
  __shared__ T name[N];          (per-block storage the emulator owns and checks)
      -> T (&name)[N] = *static_cast<T(*)[N]>(::emu::shared_slot(KEY, sizeof(T[N]), align, "name",
                                                                   sizeof(T), 1));
  extern __shared__ T name[];    -> T* const name = static_cast<T*>(::emu::dynamic_shared("name", sizeof(T)));
  asm volatile("griddepcontrol.wait;" ::: "memory")   -> ::emu::grid_dependency_wait()
  asm volatile("griddepcontrol.launch_dependents;")   -> ::emu::trigger_dependents()
  asm volatile("" : "+r"(v)) and prefetches (hints)   -> (void)0
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(n))
      -> ::emu::bulk_prefetch_l2(p, n)  (moves nothing; address, size and range checked)
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p))
                                                      -> (p) = 0ull  (an opaque cache policy)
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(a), ... : "l"(ptr), "l"(p))
      -> ::emu::cache_hinted_load(ptr, a, b, c, d)  (one checked load of the whole width)
  __CUDA_ARCH__ inside __global__ and __device__ functions -> EMU_DEVICE_CUDA_ARCH (900)
  __cluster_dims__(X, Y, Z) on a kernel   -> removed; the body starts with
                                             ::emu::kernel_cluster_dims(X, Y, Z);
  __noinline__ (a qualifier)              -> __attribute__((noinline)); a macro could not do
                                             it: libstdc++ spells __attribute__((__noinline__))

Any other inline PTX becomes a compile error that names it.

nvcc compiles a file twice: the device pass defines __CUDA_ARCH__, the host pass does not.
g++ compiles it once, so device code (the bodies of __global__ and __device__ functions)
sees the device pass's value, sm_90's, and everything else the host pass's (undefined).

usage: emu_rewrite.py INPUT OUTPUT [--display-name NAME]
"""
import os
import re
import sys


class RewriteError(Exception):
    """The source uses a construct the emulator cannot take; the message says which and where."""


def mask_comments_and_strings(text):
    """A copy of `text` with comments and string/char literals blanked (newlines kept)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != "\n":
                    out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def _match_forward(masked, start, open_ch, close_ch):
    """Index just past the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(masked)):
        if masked[i] == open_ch:
            depth += 1
        elif masked[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    raise RewriteError(f"unbalanced '{open_ch}' at line {_line_of(masked, start)}")


def _kernel_expression_start(masked, end):
    """Start of the kernel name (with namespace and template arguments) that ends at `end`."""
    i = end
    while i > 0 and masked[i - 1].isspace():
        i -= 1
    if i > 0 and masked[i - 1] == ">":
        depth = 0
        while i > 0:
            i -= 1
            if masked[i] == ">":
                depth += 1
            elif masked[i] == "<":
                depth -= 1
                if depth == 0:
                    break
        while i > 0 and masked[i - 1].isspace():
            i -= 1
    while i > 0 and (masked[i - 1].isalnum() or masked[i - 1] in "_:"):
        i -= 1
    return i


def _keep_newlines(original):
    return "\n" * original.count("\n")


def rewrite_launches(text, masked):
    edits = []
    for m in re.finditer(r"<<<", masked):
        start = _kernel_expression_start(masked, m.start())
        kernel = text[start:m.start()].strip()
        close = masked.find(">>>", m.end())
        if close < 0 or not kernel:
            raise RewriteError(f"a <<<...>>> launch without a kernel name at line {_line_of(text, m.start())}")
        config = text[m.end():close]
        paren = close + 3
        while paren < len(masked) and masked[paren].isspace():
            paren += 1
        if paren >= len(masked) or masked[paren] != "(":
            raise RewriteError(f"a <<<...>>> launch without arguments at line {_line_of(text, m.start())}")
        after = paren + 1
        while after < len(masked) and masked[after].isspace():
            after += 1
        separator = "" if masked[after] == ")" else ", "
        # A generic lambda calls the kernel the way CUDA does: template arguments are deduced
        # from the launch's arguments, which are evaluated once, at the launch.
        call = f"[=](auto&&... emu_a) {{ {kernel}(emu_a...); }}"
        replacement = f"::emu::TripleChevron(EMU_LAUNCH_MODE, {config})({call}{separator}"
        original = text[start:paren + 1]
        edits.append((start, paren + 1, replacement.replace("\n", " ") + _keep_newlines(original)))
    return edits


def _split_declaration(decl, line):
    """(type, name, array suffix, alignment or None) of one __shared__ declarator."""
    align = None
    a = re.search(r"__align__\s*\(\s*([^)]*)\)|alignas\s*\(\s*([^)]*)\)", decl)
    if a:
        align = a.group(1) or a.group(2)
        decl = decl[:a.start()] + " " + decl[a.end():]
    decl = " ".join(decl.split())
    depth = 0
    for c in decl:
        depth += c in "<([" and 1 or (c in ">)]" and -1 or 0)
        if c == "," and depth == 0:
            raise RewriteError(f"line {line}: declare one __shared__ variable per statement")
    depth, bracket = 0, -1
    for i, c in enumerate(decl):
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == "," and depth == 0:
            raise RewriteError(f"line {line}: declare one __shared__ variable per statement")
        elif c == "[" and depth == 0:
            bracket = i
            break
    head = decl if bracket < 0 else decl[:bracket]
    suffix = "" if bracket < 0 else decl[bracket:]
    m = re.search(r"([A-Za-z_]\w*)\s*$", head)
    if not m:
        raise RewriteError(f"line {line}: cannot read the __shared__ declaration '{decl}'")
    return head[:m.start()].strip(), m.group(1), suffix.replace(" ", ""), align


def rewrite_shared(text, masked):
    edits = []
    for m in re.finditer(r"(\bextern\s+)?\b__shared__\b", masked):
        end = masked.find(";", m.end())
        if end < 0:
            raise RewriteError(f"line {_line_of(text, m.start())}: a __shared__ declaration without ';'")
        line = _line_of(text, m.start())
        type_, name, suffix, align = _split_declaration(text[m.end():end], line)
        original = text[m.start():end + 1]
        if m.group(1):
            if suffix != "[]":
                raise RewriteError(f"line {line}: extern __shared__ must be an array of unknown size, like name[]")
            replacement = (f"{type_}* const {name} = static_cast<{type_}*>(::emu::dynamic_shared("
                           f"\"{name}\", sizeof({type_})));")
        else:
            full = f"{type_}{suffix}"
            alignment = f"alignof({full})" if align is None else f"(alignof({full}) > ({align}) ? alignof({full}) : ({align}))"
            replacement = (f"{type_} (&{name}){suffix} = *static_cast<{type_}(*){suffix}>("
                           f"::emu::shared_slot(EMU_SHARED_KEY, sizeof({full}), {alignment}, \"{name}\", "
                           f"sizeof({type_}), {suffix.count('[')}));")
        edits.append((m.start(), end + 1, replacement + _keep_newlines(original)))
    return edits


# An L2 cache policy (createpolicy) and a global load that carries one (.L2::cache_hint): the
# policy only steers which lines the GPU's L2 evicts first, so on the CPU it is an opaque zero
# and the load is a plain load of its whole width, checked like any other.
_TEMPLATE = r'\s*(?:"(?:[^"\\]|\\.)*"\s*)*'
_CREATEPOLICY = re.compile(r"createpolicy\.fractional\.L2::evict_(last|first|normal|unchanged)"
                           r"(\.L2::evict_(last|first|normal|unchanged))?\.b64\s+%(?P<dest>\d+)\s*,\s*[0-9.]+f?\s*;?")
_BULK_PREFETCH = re.compile(r"cp\.async\.bulk\.prefetch\.L2\.global\s*\[\s*%(?P<addr>\d+)\s*\]\s*,\s*%(?P<size>\d+)\s*;?")
_HINTED_LOAD = re.compile(r"ld\.global(\.nc)?(\.L1::(evict_normal|evict_first|evict_last|evict_unchanged|no_allocate))?"
                          r"\.L2::cache_hint(\.v(?P<width>2|4))?\.(u32|b32|s32|f32)\s+"
                          r"(?P<dests>\{\s*%\d+(\s*,\s*%\d+)*\s*\}|%\d+)\s*,\s*\[\s*%(?P<addr>\d+)\s*\]\s*,\s*%\d+\s*;?")


def _operands(body, line):
    """The C++ expressions of an asm statement's operands, outputs first, as PTX numbers them."""
    rest = body[re.match(_TEMPLATE, body).end():]
    sections, depth, start, i = [], 0, 0, 0
    while i < len(rest):
        c = rest[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and rest[i:i + 2] == "::" and rest[i + 2:].lstrip().startswith('"'):
            # `asm("..." :: "l"(p))`: no outputs, the two separators written together (a C++
            # scope `::name` is never followed by a string literal).
            sections += [rest[start:i], ""]
            start = i + 2
            i += 1
        elif c == ":" and depth == 0 and rest[i - 1:i] != ":" and rest[i + 1:i + 2] != ":":
            sections.append(rest[start:i])
            start = i + 1
        i += 1
    sections.append(rest[start:])
    exprs = []
    for section in sections[1:3]:  # outputs, inputs (sections[0] is what precedes the first colon)
        for m in re.finditer(r'"[^"]*"\s*\(', section):
            close = _match_forward(section, m.end() - 1, "(", ")")
            exprs.append(section[m.end():close - 1].strip())
    if not exprs:
        raise RewriteError(f"line {line}: an asm statement whose operands the emulator needs has none")
    return exprs


def _cache_hint_call(template, body, line):
    """The C++ call that stands for a createpolicy or a cache-hinted load, or None for other PTX."""
    m = _CREATEPOLICY.fullmatch(template)
    if m:
        return f"({_operands(body, line)[int(m.group('dest'))]}) = 0ull"
    m = _HINTED_LOAD.fullmatch(template)
    if m:
        ops = _operands(body, line)
        dests = [ops[int(d)] for d in re.findall(r"%(\d+)", m.group("dests"))]
        if len(dests) != int(m.group("width") or 1):
            raise RewriteError(f"line {line}: {template!r} names {len(dests)} destinations for its width")
        return f"::emu::cache_hinted_load({ops[int(m.group('addr'))]}, {', '.join(dests)})"
    return None


def rewrite_asm(text, masked):
    edits = []
    for m in re.finditer(r"\b(asm|__asm__)\b(\s+(volatile|__volatile__))?\s*\(", masked):
        close = _match_forward(masked, m.end() - 1, "(", ")")
        body = text[m.end():close - 1]
        original = text[m.start():close]
        # The template is the string literals before the first operand section; PTX's own
        # "::" (L2::cache_hint) sits inside them, so the split cannot be at the first colon.
        template = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', re.match(_TEMPLATE, body).group(0)))
        if "griddepcontrol.wait" in template:
            replacement = "::emu::grid_dependency_wait()"
        elif "griddepcontrol.launch_dependents" in template:
            replacement = "::emu::trigger_dependents()"
        elif (bulk := _BULK_PREFETCH.fullmatch(template.strip())) is not None:
            ops = _operands(body, _line_of(text, m.start()))
            replacement = f"::emu::bulk_prefetch_l2({ops[int(bulk.group('addr'))]}, {ops[int(bulk.group('size'))]})"
        elif template.strip() == "" or template.strip().startswith("prefetch"):
            replacement = "(void)0"  # register pinning and prefetch hints: no effect on results
        elif (hinted := _cache_hint_call(template.strip(), body, _line_of(text, m.start()))) is not None:
            replacement = hinted
        else:
            ptx = template.strip().replace('"', "'")
            replacement = f'static_assert(sizeof(int) == 0, "the CPU emulator does not run the inline PTX \\"{ptx}\\"")'
        edits.append((m.start(), close, replacement + _keep_newlines(original)))
    return edits


def _body_after(masked, pos):
    """(open, close) of the function body that follows the declaration head at `pos`, or None when
    the head ends in ';' or '=' (a declaration or a variable) first. `close` is len(masked) when the
    body's braces do not balance (preprocessor branches with unmatched braces)."""
    depth = 0
    for i in range(pos, len(masked)):
        c = masked[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and c in ";=":
            return None
        elif depth == 0 and c == "{":
            try:
                return i, _match_forward(masked, i, "{", "}")
            except RewriteError:
                return i, len(masked)
    return None


def device_ranges(masked):
    """(start, end) of the bodies of __global__ and __device__ functions (lambdas inside included)."""
    ranges = []
    for m in re.finditer(r"\b(__global__|__device__)\b", masked):
        if ranges and m.start() < ranges[-1][1]:
            continue  # inside a body already found
        body = _body_after(masked, m.end())
        if body:
            ranges.append(body)
    return ranges


def rewrite_cuda_arch(text, masked):
    """Device code sees the device pass's __CUDA_ARCH__ (sm_90); host code keeps it undefined."""
    edits = []
    for start, end in device_ranges(masked):
        for m in re.finditer(r"\b__CUDA_ARCH__\b", text[start:end]):
            a = start + m.start()
            # Only where the token is code or a directive, not inside a comment or string.
            if masked[a] == "_":
                edits.append((a, a + len("__CUDA_ARCH__"), "EMU_DEVICE_CUDA_ARCH"))
    return edits


def rewrite_cluster_dims(text, masked):
    """`__cluster_dims__(X, Y, Z)` leaves the head; the kernel's body announces it when it starts."""
    edits = []
    for m in re.finditer(r"\b__cluster_dims__\s*\(", masked):
        close = _match_forward(masked, m.end() - 1, "(", ")")
        args = " ".join(text[m.end():close - 1].split())
        body = _body_after(masked, close)
        if not body:
            raise RewriteError(f"line {_line_of(text, m.start())}: the CPU emulator reads __cluster_dims__ on a kernel's "
                              "definition only: put it on the definition (the declaration with the body)")
        edits.append((m.start(), close, " " + _keep_newlines(text[m.start():close])))
        edits.append((body[0], body[0] + 1, f"{{ ::emu::kernel_cluster_dims({args});"))
    return edits


def rewrite_noinline(text, masked):
    """The qualifier `__noinline__` in the learner's code; the same word inside an attribute stays."""
    edits = []
    for m in re.finditer(r"\b__noinline__\b", masked):
        if re.search(r"__attribute__\s*\(\(\s*$", masked[max(0, m.start() - 40):m.start()]):
            continue
        edits.append((m.start(), m.end(), "__attribute__((noinline))"))
    return edits


def rewrite(text):
    masked = mask_comments_and_strings(text)
    edits = (rewrite_launches(text, masked) + rewrite_shared(text, masked) + rewrite_asm(text, masked)
             + rewrite_cuda_arch(text, masked) + rewrite_cluster_dims(text, masked)
             + rewrite_noinline(text, masked))
    edits.sort()
    out, pos = [], 0
    for start, end, replacement in edits:
        if start < pos:
            raise RewriteError(f"overlapping constructs at line {_line_of(text, start)}")
        out.append(text[pos:start])
        out.append(replacement)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def main(argv):
    args = list(argv)
    display = None
    if "--display-name" in args:
        i = args.index("--display-name")
        display = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    src, dst = args
    with open(src, encoding="utf-8") as f:
        text = f.read()
    try:
        result = rewrite(text)
    except RewriteError as e:
        print(f"{display or src}: {e}", file=sys.stderr)
        return 1
    name = (display or src).replace("\\", "/").replace('"', "")
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    with open(dst, "w", encoding="utf-8") as f:
        f.write(f'#line 1 "{name}"\n' + result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
