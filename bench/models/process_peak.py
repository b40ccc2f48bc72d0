"""Process memory of one call of a bench/models case (issue 16, point 5; issue 32, point 4): a
training step (forward and backward) or an inference call, under eager, the default backend
(inductor) and Stax, with Stax's inputs released at their last use (the default), held until
each graph returns (as before), and with outputs from PyTorch's allocator instead of Stax's
pool (the pool's share). The default case is issue 16's: the 2-layer BERT at batch 8, a
training step.

Each variant runs in its own process: 3 warm-up steps (compilation, pools and arenas filled),
then the kernel's peak-RSS mark is reset (/proc/self/clear_refs) and one step runs; the table
gives the resident memory before the step and the peak during it, and the peak's increase.
Each process runs with glibc mapping every block above 64 KiB on its own and unmapping it when
freed, so resident memory follows what is live. Stax's pooled outputs and arenas stay resident
between steps: they are in "before", and the peak is the measure to compare.

Usage: .venv/bin/python bench/models/process_peak.py [--model bert] [--mode train|infer]
       [--batch 8] [--variants eager,inductor,stax] [--dtype float32] [--out FILE]
"""

import argparse
import json
import os
import subprocess
import sys

VARIANTS = ["eager", "inductor", "stax", "stax (inputs held)", "stax (no output pool)",
            "stax (matmul B in place)"]


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def measure(variant, model_name, batch, training, dtype_name):
    import torch

    sys.path.insert(0, os.path.dirname(__file__))
    import case
    import models

    torch.manual_seed(0)
    dtype = getattr(torch, dtype_name)
    model, kind, vocab = models.build(model_name, dtype)
    model.train(training)
    inputs = models.make_inputs(kind, vocab, batch, dtype)
    if variant.startswith("stax"):
        import stax.backend

        if variant == "stax (inputs held)":
            # Before: every graph holds its inputs until it returns.
            import stax.region

            stax.backend._boxed_graph = stax.backend._boxed
            straight = stax.region.Region._straight_line_call
            stax.region.Region._straight_line_call = lambda self: (straight(self)[0], None)
        # The output pool's share of the footprint: outputs from PyTorch's allocator instead.
        options = {"output_pool": False} if variant == "stax (no output pool)" else None
        # The workspaces of products whose B is packed on every run (matmul_weights_form.h).
        if variant == "stax (matmul B in place)":
            options = {"measure_matmul_weights": False}
        compiled = torch.compile(model, backend="stax", options=options)
    elif variant == "inductor":
        compiled = torch.compile(model)
    else:
        compiled = model
    step = case.make_step(compiled, inputs, training=training)
    for _ in range(3):
        step()
    import gc

    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    before = rss_kib("VmRSS")
    step()
    peak = rss_kib("VmHWM")
    result = {"before_mib": before / 1024, "peak_mib": peak / 1024,
              "step_mib": (peak - before) / 1024}
    if variant.startswith("stax"):
        # What Stax itself holds after the step (stax.memory_stats()): the share of the peak
        # that issue 32's bound on the pool and the arenas is about.
        import stax

        m = stax.memory_stats()
        result["pool_mib"] = m["output_pool"]["cached_bytes"] / 2**20
        result["arenas_mib"] = m["arenas"]["held_bytes"] / 2**20
        result["scratch_mib"] = (m["scratch"]["program_bytes"]
                                 + m["scratch"]["library_workspace_bytes"]) / 2**20
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="bert")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--mode", choices=["train", "infer"], default="train")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--variant", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.variant:
        import torch

        torch.set_num_threads(args.threads)
        print(json.dumps(measure(args.variant, args.model, args.batch, args.mode == "train",
                                 args.dtype)))
        return
    rows = []
    for variant in args.variants.split(","):
        # glibc maps every block above 64 KiB on its own and unmaps it when freed, so resident
        # memory follows what is live instead of what the C library keeps for reuse.
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
        out = subprocess.run([sys.executable, __file__, "--model", args.model, "--batch",
                              str(args.batch), "--threads", str(args.threads), "--mode",
                              args.mode, "--dtype", args.dtype, "--variant", variant],
                             capture_output=True, text=True, check=True, env=env)
        rows.append((variant, json.loads(out.stdout.strip().splitlines()[-1])))
    what = "Training step" if args.mode == "train" else "Inference call"
    lines = [f"{what} of {args.model}, {args.dtype}, batch {args.batch}, {args.threads} threads "
             "(resident memory, MiB)", "",
             "| variant | before the step | peak in the step | increase | Stax's pool / arenas / "
             "scratch after it |", "|---|---|---|---|---|"]
    for variant, r in rows:
        held = (f"{r['pool_mib']:.0f} / {r['arenas_mib']:.0f} / {r['scratch_mib']:.0f}"
                if "pool_mib" in r else "")
        lines.append(f"| {variant} | {r['before_mib']:.0f} | {r['peak_mib']:.0f} | "
                     f"{r['step_mib']:.0f} | {held} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
