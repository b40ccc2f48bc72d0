"""Section 7.5's memory plan on the benchmark models (issue 16): for every Stax program of a
model's forward (inference) and training step (forward and backward graphs), the peak the
chosen kernel order gives the buffers a call allocates (M*, Definition 7.5; outputs included),
the peak the original order would give, and the arena holding the intermediates against
their own M*. Read from each program's `stax explain` (STAX_DEBUG_DIR); nothing is timed.

Usage: .venv/bin/python bench/models/memory_plan.py [--models bert,gpt2] [--out FILE.md]"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import sys
import tempfile

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import case  # noqa: E402
import models  # noqa: E402

ORDER = re.compile(r"\(original (\d+), minimum-peak-first (\d+), breadth-first (\d+), "
                   r"depth-first (\d+)\)")
PEAK = re.compile(r"peak of the allocated buffers \(M\*\): (\d+) bytes")
IN_PLACE = re.compile(r"^\s*\S+ = \S+  # in place", re.M)
ARENA = re.compile(r"arena: (\d+) intermediates at fixed offsets in (\d+) bytes, kept across "
                   r"calls \(their M\* is (\d+) bytes\)")


def plans(debug_dir: pathlib.Path):
    """(original peak, chosen peak, arena bytes, intermediates' M*, buffers written in place
    of an intermediate) per program."""
    out = []
    for explain in sorted(debug_dir.rglob("*.explain.txt")):
        text = explain.read_text()
        peak = PEAK.search(text)
        if peak is None:
            continue
        order = ORDER.search(text)
        original = int(order.group(1)) if order else int(peak.group(1))
        arena = ARENA.search(text)
        out.append((original, int(peak.group(1)), int(arena.group(2)) if arena else 0,
                    int(arena.group(3)) if arena else 0, len(IN_PLACE.findall(text))))
    return out


def mib(b: int) -> str:
    return f"{b / 2**20:.1f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(models.BUILDERS))
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = ["| model | mode | programs | peak, original order (MiB) | peak, chosen order (MiB) "
            "| arena (MiB) | intermediates' M* (MiB) | written in place |",
            "|---|---|---|---|---|---|---|---|"]
    for name in args.models.split(","):
        for mode in ("infer-b4", "train-b2"):
            training, batch = case.parse_mode(mode)
            with tempfile.TemporaryDirectory() as tmp:
                os.environ["STAX_DEBUG_DIR"] = tmp
                torch._dynamo.reset()
                model, kind, vocab = models.build(name, torch.float32)
                model.train(training)
                inputs = models.make_inputs(kind, vocab, batch, torch.float32)
                compiled = torch.compile(model, backend="stax")
                case.make_step(compiled, inputs, training)()
                found = plans(pathlib.Path(tmp))
                del os.environ["STAX_DEBUG_DIR"]
            total = [sum(p[k] for p in found) for k in range(5)]
            rows.append(f"| {name} | {mode} | {len(found)} | {mib(total[0])} | {mib(total[1])} "
                        f"| {mib(total[2])} | {mib(total[3])} | {total[4]} |")
            print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    if args.out:
        pathlib.Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
