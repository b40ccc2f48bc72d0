"""Issue 33's second target: for every bench/models case, the one program Stax compiles with
dynamic=True against the static program of the same shape, at two sequence lengths (two image
sizes for ResNet), float32 and bfloat16, inference and a training step.

Each case is one process of bench/models/case.py with `--backends stax --stax-variant
'stax-symbolic={"dynamic": true}'`: both compiled in that process and timed interleaved
round-robin. Prints a markdown table (median and p10-p90 in ms, the ratio) and writes the raw
results as JSON lines to --out.

Usage: chrt -f 1 .venv/bin/python bench/dynamic/symbolic_models.py --out /tmp/sym.jsonl
  [--models bert,gpt2] [--lengths 128,77] [--images 224,192] [--reps 20] [--warmup 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASE = os.path.join(os.path.dirname(HERE), "models", "case.py")
TEXT_MODELS = ("bert", "bert-sdpa", "gpt2", "t5-encoder", "llama", "llama-gqa-sdpa")
MODES = ("infer-b1", "infer-b4", "train-b2")
DTYPES = ("float32", "bfloat16")


def run(model, mode, dtype, size_flag, size, reps, warmup, timeout):
    cmd = [sys.executable, CASE, model, mode, dtype, "--reps", str(reps), "--warmup",
           str(warmup), "--backends", "stax", "--stax-variant",
           'stax-symbolic={"dynamic": true}']
    if size_flag:
        cmd += [size_flag, str(size)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError) as e:
        return {"model": model, "mode": mode, "dtype": dtype, "backends": {},
                "errors": {"case": f"{type(e).__name__}: {e}"}}


def row(r, size) -> str:
    b = r.get("backends", {})
    if "stax" not in b or "stax-symbolic" not in b:
        return f"| {r['model']} | {r['mode']} | {r['dtype']} | {size} | failed: {r.get('errors')} | | |"

    def cell(name):
        s = b[name]
        return f"{s['median_ms']:.1f} ({s['p10_ms']:.1f}-{s['p90_ms']:.1f})"

    ratio = b["stax-symbolic"]["median_ms"] / b["stax"]["median_ms"]
    return (f"| {r['model']} | {r['mode']} | {r['dtype']} | {size} | {cell('stax')} | "
            f"{cell('stax-symbolic')} | {ratio:.3f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(TEXT_MODELS + ("vit", "resnet18")))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--lengths", default="128,77")
    parser.add_argument("--images", default="224,192")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=1200)
    args = parser.parse_args()
    print("| model | mode | dtype | length or image | static program | one program "
          "(dynamic=True) | ratio |")
    print("|---|---|---|---|---|---|---|", flush=True)
    with open(args.out, "a") as out:
        for model in args.models.split(","):
            if model in TEXT_MODELS:
                flag, sizes = "--seq", args.lengths.split(",")
            elif model == "resnet18":
                flag, sizes = "--image", args.images.split(",")
            else:
                flag, sizes = "", ["224"]  # ViT's position embeddings fix its image size
            for mode in args.modes.split(","):
                for dtype in args.dtypes.split(","):
                    for size in sizes:
                        r = run(model, mode, dtype, flag, size, args.reps, args.warmup,
                                args.timeout)
                        out.write(json.dumps(r) + "\n")
                        out.flush()
                        print(row(r, size), flush=True)


if __name__ == "__main__":
    main()
