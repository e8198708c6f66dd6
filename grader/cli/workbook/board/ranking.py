"""Ranking: correct, cleanly timed results by bandwidth, ties within the noise band, per GPU model."""
import math


def _geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def summarise(bench):
    return {"gbps": _geomean([b["student_gbps"] for b in bench]),
            "of_reference": _geomean([b["ratio"] for b in bench]),
            "of_copy": _geomean([b["copy_fraction"] for b in bench]),
            "noise": max([b.get("noise", 0.01) for b in bench] or [0.01])}


def is_ranked(r):
    """Correct, and timed with the GPU to itself (a result next to a foreign process is not clean)."""
    return r["status"].startswith("correct") and r.get("clean", True)


def rank(results):
    """{gpu: [rows]} with rank numbers; correct first by bandwidth, ties within the noise band."""
    by_gpu = {}
    for r in results:
        by_gpu.setdefault(r.get("gpu", "no GPU"), []).append(dict(r))
    for gpu, rows in by_gpu.items():
        correct = [r for r in rows if is_ranked(r)]
        others = [r for r in rows if not is_ranked(r)]
        correct.sort(key=lambda r: (-r.get("gbps", 0), r["name"]))
        previous = None
        for i, r in enumerate(correct):
            if previous and previous.get("gbps", 0) > 0 and \
                    previous["gbps"] - r.get("gbps", 0) <= max(previous["noise"], r["noise"]) * previous["gbps"]:
                r["rank"], r["tie"] = previous["rank"], True
                previous["tie"] = True
            elif previous and previous.get("gbps", 0) == 0 and r.get("gbps", 0) == 0:
                r["rank"], r["tie"] = previous["rank"], True  # no timing (lesson 1): all correct ones tie
                previous["tie"] = True
            else:
                r["rank"], r["tie"] = i + 1, False
            previous = r
        for r in others:
            r["rank"], r["tie"] = None, False
        by_gpu[gpu] = correct + sorted(others, key=lambda r: r["name"])
    return by_gpu


def rank_text(r):
    if r["rank"] is None:
        return "-"
    return f"={r['rank']}" if r.get("tie") else str(r["rank"])
