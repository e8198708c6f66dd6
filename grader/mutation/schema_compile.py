"""Compiling a lesson's mutants into schemata (schema.py) for the CPU emulator, and checking them.

`prepare` builds one schema of the switches it is given and checks it with `g++ -fsyntax-only` (a few
seconds). When the check fails, the switches on the lines the compiler's errors name are taken out
and the rest is checked again; the named ones are checked again apart, as a schema of their own (a
switch often fails only beside another), when they hold MIN_RETRY mutants or more, else compiled one
by one, as without schemata. When no error names a switch, or every one is named, the set is halved
and each half checked apart. What passes is compiled (the
instrumented build, once; a failure there is narrowed the same way). Every schema that compiles is graded once as the reference (mutant 0): it
must pass, or its mutants are graded one by one instead (a schema must change nothing but what its
switches select).
"""
import hashlib
import os
from dataclasses import dataclass, field

from . import grading, schema


# The switches a failed compile names are tried again as a schema of their own when they hold at least
# this many mutants; fewer are compiled one by one (a schema costs a compile and a reference run).
MIN_RETRY = 4


@dataclass
class Schema:
    """A compiled schema: its source, library, and the number of each mutant it holds."""
    path: str
    content: str
    lib: str
    shown: str
    numbers: dict = field(default_factory=dict)  # mutant name -> its number in the schema


def numbered(all_mutants, chosen):
    """(number, mutant) for the chosen mutants; a mutant's number is its place in the lesson's full list
    (1-based), so it does not change with the selection."""
    place = {m.name: k + 1 for k, m in enumerate(all_mutants)}
    return [(place[m.name], m) for m in chosen]


def prepare(lesson, text, placed, pairs, out, seed, timeout_s, log=print):
    """Compiles schemata holding the switches `placed` (schema.switches of `pairs`, [(number, mutant)]);
    returns (schemata, singles), singles the mutants of `placed` that must be compiled on their own."""
    from workbook import emulated
    from workbook.build import BuildError

    folder = os.path.join(out, "schema")
    os.makedirs(folder, exist_ok=True)
    singles = []
    counts = {"checks": 0, "compiles": 0}

    def write(switches):
        content = schema.build(text, switches)
        digest = hashlib.sha256(content.encode()).hexdigest()[:12]
        path = os.path.join(folder, f"schema-{digest}{grading.mutant_suffix(lesson)}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
        return path, content

    def narrow(switches, attempt):
        """The switches that pass `attempt` (a check or a compile of their schema), taking out those the
        errors name, or halving when none is named; the others join `singles`. Returns a list of sets."""
        if not switches:
            return []
        path, _ = write(switches)
        try:
            attempt(path)
            return [switches]
        except BuildError as e:
            kept, dropped = schema.split_failures(text, switches, f"{e}\n{e.output}", os.path.basename(path))
            members = sum(len(s.members) for s in switches)
            if not kept:
                # No error names a switch (kept is None), or every one is named: halve, so that those
                # that only fail together part; a single switch left is compiled alone.
                if len(switches) == 1:
                    singles.extend(m for _, m in switches[0].members)
                    log(f"  a switch of {members} mutant(s) did not compile: {_first_error(e.output)}")
                    return []
                why = "no error names a switch" if kept is None else "every switch is named"
                log(f"  schema of {members} mutant(s) did not compile; {why}: halved")
                half = len(switches) // 2
                return narrow(switches[:half], attempt) + narrow(switches[half:], attempt)
            names = ", ".join(m.name for s in dropped for _, m in s.members)
            out_of = sum(len(s.members) for s in dropped)
            if out_of >= MIN_RETRY:
                # Switches often fail only beside others (one mutant instantiates a template for types
                # another's branch was not written for): the named ones are tried again as a schema of
                # their own before any is compiled alone.
                log(f"  schema of {members} mutant(s) did not compile: {names} tried apart")
                return narrow(kept, attempt) + narrow(dropped, attempt)
            log(f"  schema of {members} mutant(s) did not compile: one by one instead: {names}")
            singles.extend(m for s in dropped for _, m in s.members)
            return narrow(kept, attempt)

    def check(path):
        counts["checks"] += 1
        emulated.check_for_emulator(lesson, path, os.path.relpath(path, grading.ROOT))

    built = []

    def compile_set(path):
        counts["compiles"] += 1
        lib = emulated.compile_for_emulator(lesson, path, os.path.relpath(path, grading.ROOT))
        built.append((path, lib))

    sets = []
    groups = narrow(placed, check)  # the parse and template instantiation: a few seconds a try
    largest = max(groups, key=lambda g: sum(len(s.members) for s in g), default=None)
    for group in groups:
        few = sum(len(s.members) for s in group)
        if group is not largest and few < MIN_RETRY:
            # A schema costs a compile, a reference run and a coverage run: not worth it for so few.
            log(f"  a schema of {few} mutant(s) would pass: one by one instead")
            singles.extend(m for s in group for _, m in s.members)
            continue
        sets += narrow(group, compile_set)  # then the instrumented build, once when all is well
    schemata = []
    for path, lib in built:
        with open(path, encoding="utf-8") as f:
            content = f.read()
        numbers = {}
        for switches in sets:
            if write(switches)[0] == path:
                numbers = {m.name: k for s in switches for k, m in s.members}
        schemata.append(Schema(path, content, lib, os.path.relpath(path, grading.ROOT), numbers))
    checked = []
    for s in schemata:
        status, detail, seconds = grading.grade_in_schema(lesson, s.lib, s.shown, 0, s.path + ".reference", seed,
                                                          timeout_s)
        if status == grading.SURVIVED:
            checked.append(s)
            log(f"  schema {os.path.basename(s.path)}: {len(s.numbers)} mutant(s) in one compile; as the "
                f"reference it passes ({seconds:.1f} s)")
        else:
            log(f"  schema {os.path.basename(s.path)} does not pass as the reference ({status}: {detail[:160]}); "
                f"its {len(s.numbers)} mutant(s) are graded one by one")
            singles.extend(m for _, m in pairs if m.name in s.numbers)
    log(f"  {sum(len(s.numbers) for s in checked)} mutant(s) in {len(checked)} schema(ta) after "
        f"{counts['checks']} check(s) and {counts['compiles']} compile(s); {len(singles)} more compiled one by one")
    return checked, singles


def _first_error(output):
    for line in (output or "").splitlines():
        if "error" in line:
            return " ".join(line.split())[:200]
    return ""
