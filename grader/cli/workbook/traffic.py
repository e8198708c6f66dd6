"""The traffic report of a grade on the CPU emulator, and the gate verdict predicted from it.

wb-grader-emu --traffic FILE records each benchmark shape once, the submission's call and the
reference's, on sampled blocks (docs/emulator.md, "Traffic"): DRAM bytes behind a 50 MB L2, sectors
per request, bytes per memory instruction, shared-memory bank conflicts, the launch shape and the
bytes each thread keeps in flight. This module turns those figures into a predicted time for an
H100, a predicted ratio against the reference at every shape, a predicted gate verdict, and the one
reason that most likely limits the kernel, in the words `--profile` uses (profile.most_likely_limit).
Everything it prints says "predicted on the CPU": it never decides a verdict.
"""
import json
import math

from . import profile

LABEL = "predicted on the CPU"

# The device the prediction is for: an H100 SXM.
SMS = 132
THREADS_PER_SM = 2048
BLOCKS_PER_SM = 32
SHARED_PER_SM = 228 * 1024
SHARED_RESERVED_PER_BLOCK = 1024
DRAM_PEAK = 3.35e12        # bytes/s
DRAM_COPY = 3.0e12         # what a large device-to-device copy reaches
DRAM_LATENCY = 800e-9      # s: a load's round trip under load
L2_BANDWIDTH = 5.5e12      # bytes/s
CLOCK = 1.755e9            # Hz
LAUNCH_SECONDS = 2.0e-6    # a launch in a CUDA graph, its ramp and its drain
# Bytes an SM must keep in flight for DRAM to run at full speed (Little's law).
NEEDED_IN_FLIGHT_PER_SM = DRAM_COPY * DRAM_LATENCY / SMS


def resident_blocks(launch):
    """Blocks of this launch one SM holds at once: threads, blocks and shared memory allow (registers
    are not known on the CPU and are taken not to limit)."""
    threads = max(1, launch["threads_per_block"])
    by_threads = THREADS_PER_SM // threads
    by_shared = SHARED_PER_SM // (launch["shared_bytes_per_block"] + SHARED_RESERVED_PER_BLOCK)
    return max(1, min(BLOCKS_PER_SM, by_threads, by_shared))


def predict_launch(launch):
    """One launch's predicted figures: time, DRAM bytes, waves, occupancy and what bounds it."""
    scale = launch["units"] / max(1, launch["units_run"])
    resident = resident_blocks(launch)
    blocks = max(1, launch["grid_blocks"])
    waves = blocks / (SMS * resident)
    active_sms = min(SMS, blocks)
    per_sm = min(resident, blocks / active_sms)  # blocks an active SM actually holds
    occupancy = per_sm * launch["threads_per_block"] / THREADS_PER_SM
    in_flight = per_sm * launch["threads_per_block"] * launch["inflight_bytes_per_thread"]
    # DRAM runs at full speed when the whole GPU keeps enough bytes in flight.
    latency_eff = min(1.0, active_sms * in_flight / (SMS * NEEDED_IN_FLIGHT_PER_SM))
    # The last, part-filled wave: half its idle time is lost (the other blocks speed up meanwhile).
    tail_eff = 1.0 if waves <= 1 else 1.0 - 0.5 * (math.ceil(waves) - waves) / math.ceil(waves)
    dram = launch["dram_read_bytes"] + launch["dram_write_bytes"]
    times = {
        "dram": dram / (DRAM_COPY * max(1e-3, latency_eff) * tail_eff),
        "l2": launch["global_sectors"] * scale * 32 / L2_BANDWIDTH,
        "lsu": launch["global_requests"] * scale / (SMS * CLOCK),
        "shared": (launch["shared_requests"] + launch["shared_wavefronts"]) * scale / (SMS * CLOCK),
    }
    bound = max(times, key=times.get)
    requests = launch["global_requests"]
    return {
        "time": LAUNCH_SECONDS + times[bound],
        "bound": bound,
        "dram_bytes": dram,
        "waves": waves,
        "occupancy": occupancy,
        "latency_eff": latency_eff,
        "in_flight_per_sm": in_flight,
        "sectors_per_request": launch["global_sectors"] / requests if requests else 0.0,
        "bytes_per_instruction": (launch["global_lane_bytes"] / launch["global_lane_accesses"]
                                  if launch["global_lane_accesses"] else 0.0),
        "conflicts_per_request": (launch["shared_wavefronts"] / launch["shared_requests"]
                                  if launch["shared_requests"] else 0.0),
        "grid": launch["grid_blocks"],
        "block": launch["threads_per_block"],
    }


def predict_side(side):
    """A call's predicted figures: its launches' times added, the figures of the one moving the most."""
    if not side.get("launches"):
        return None
    launches = [predict_launch(l) for l in side["launches"]]
    main = max(launches, key=lambda p: p["dram_bytes"])
    out = dict(main)
    out["time"] = sum(p["time"] for p in launches)
    out["dram_bytes"] = sum(p["dram_bytes"] for p in launches)
    out["kernels"] = len(launches)
    return out


def _stall(p):
    """The warp-stall reason the prediction stands for, as --profile names them."""
    if p["bound"] == "dram" and p["latency_eff"] < 0.9:
        return "long_scoreboard"
    if p["bound"] in ("l2", "lsu"):
        return "lg_throttle"
    if p["bound"] == "shared":
        return "mio_throttle"
    return None


def as_profile(p):
    """The predicted figures in the shape profile.most_likely_limit reads."""
    time_us = p["time"] * 1e6
    stall = _stall(p)
    return {
        "kernels": p["kernels"],
        "time_us": time_us,
        "dram_bytes": p["dram_bytes"],
        "dram_pct": 100.0 * p["dram_bytes"] / (p["time"] * DRAM_PEAK),
        "occupancy_pct": 100.0 * p["occupancy"],
        "waves": p["waves"],
        "stalls": [(stall, 1.0)] if stall else [],
    }


def predict(data):
    """Every shape's prediction and the predicted gate verdict with its reason."""
    gate = data["gate_fraction"]
    shapes = []
    for s in data["shapes"]:
        mine, ref = predict_side(s["student"]), predict_side(s["reference"])
        row = {"shape": s["shape"], "dtype": s["dtype"], "bytes": s["bytes"], "mine": mine, "ref": ref,
               "error": s["student"].get("error") or s["reference"].get("error")}
        if mine and ref:
            row["ratio"] = ref["time"] / mine["time"]
        shapes.append(row)
    judged = [r for r in shapes if "ratio" in r]
    verdict, reason = "unknown", "no benchmark shape could be recorded"
    if judged:
        worst = min(judged, key=lambda r: r["ratio"])
        if worst["ratio"] < gate:
            limit = profile.most_likely_limit(as_profile(worst["mine"]), as_profile(worst["ref"]), worst["bytes"])
            verdict = "fail-gate"
            reason = (f"{worst['shape']} {worst['dtype']} at {worst['ratio']:.2f} of the reference's bandwidth (the gate "
                      f"asks for {gate:.2f}); most likely limit: {limit}")
        else:
            # As --profile does by default: the shape that moves the most bytes.
            big = max(judged, key=lambda r: r["bytes"])
            limit = profile.most_likely_limit(as_profile(big["mine"]), as_profile(big["ref"]), big["bytes"])
            verdict = "pass"
            reason = (f"every shape at {worst['ratio']:.2f} of the reference's bandwidth or better (the gate asks for "
                      f"{gate:.2f}); at {big['shape']} {big['dtype']}: {limit}")
    return {"label": LABEL, "verdict": verdict, "reason": reason, "gate_fraction": gate, "shapes": shapes}


def _bytes(n):
    return profile._bytes(n)


def format_report(result):
    """The table and the verdict line, as printed after an emulated grade."""
    out = [f"\ntraffic on the CPU emulator and the gate {LABEL} (for an H100; the gate itself needs a GPU, and this "
           "decides nothing):"]
    head = ("shape", "who", "DRAM bytes", "sectors/req", "B/instr", "bank confl.", "grid x block", "waves",
            "in flight/SM", "time", "ratio")
    rows = []
    for r in result["shapes"]:
        name = f"{r['shape']} {r['dtype']}"
        if r.get("error") or not r["mine"] or not r["ref"]:
            rows.append((name, "", f"not recorded: {r.get('error') or 'no launch'}", "", "", "", "", "", "", "", ""))
            continue
        for who, p in (("yours", r["mine"]), ("reference", r["ref"])):
            rows.append((name if who == "yours" else "", who,
                         f"{_bytes(p['dram_bytes'])} ({p['dram_bytes'] / r['bytes']:.2f}x)",
                         f"{p['sectors_per_request']:.1f}", f"{p['bytes_per_instruction']:.0f}",
                         f"{p['conflicts_per_request']:.1f}", f"{p['grid']} x {p['block']}", f"{p['waves']:.2f}",
                         _bytes(p["in_flight_per_sm"]), f"{p['time'] * 1e6:.1f} us",
                         f"{r['ratio']:.2f}" if who == "yours" else ""))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    out.append("  " + "  ".join(h.ljust(w) for h, w in zip(head, widths)))
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    word = {"pass": "pass", "fail-gate": "fail", "unknown": "unknown"}[result["verdict"]]
    out.append(f"\npredicted gate verdict ({LABEL}): {word}: {result['reason']}")
    out.append("  (bytes counted in 32-byte sectors behind a 50 MB L2; time from the bytes and the bytes in flight each "
               "SM keeps; see docs/emulator.md, \"Traffic\")")
    return "\n".join(out)


def report(path, json_report=None):
    """Prints the report of the figures in `path`; adds the prediction to the JSON report, if any.
    Returns the prediction (None when there is no file)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    result = predict(data)
    print(format_report(result))
    if json_report:
        try:
            with open(json_report, encoding="utf-8") as f:
                j = json.load(f)
            j["predicted_gate"] = {k: result[k] for k in ("label", "verdict", "reason", "gate_fraction")}
            j["predicted_gate"]["shapes"] = [
                {"shape": r["shape"], "dtype": r["dtype"], "ratio": r.get("ratio"),
                 "dram_bytes": r["mine"]["dram_bytes"] if r["mine"] else None,
                 "reference_dram_bytes": r["ref"]["dram_bytes"] if r["ref"] else None} for r in result["shapes"]]
            with open(json_report, "w", encoding="utf-8") as f:
                json.dump(j, f, indent=1)
        except (OSError, ValueError):
            pass
    return result
