"""bench/models: eager, torch.compile's default backend (inductor) and
torch.compile(backend="stax") on Hugging Face models built from their configs with random
weights (nothing downloaded): BERT-base, GPT-2 (eager attention), a T5 encoder, a LLaMA-style
decoder, ViT and ResNet-18, 2 layers each at the real models' widths. Inference at batch 1 and
at a larger batch, and a training step (forward and loss.sum().backward()), in float32 and
bfloat16, 2 threads, the backends interleaved round-robin per repetition, warm-up excluded.

Writes RESULTS.md (machine, per-case table with median and p10-p90, ratios, compile time, the
split of Stax's time between GEMM library calls, its own kernels and the rest, the ops that fell
back to PyTorch, GEMM efficiency against the standalone oneDNN plan), the chart
bench/models_chart.png and the raw results as JSON beside RESULTS.md.

matplotlib draws the chart; it is a bench-only dependency (not one of the tests'), so this
script pip-installs it into the running interpreter's environment when it is missing.

Usage (the one documented command, see README.md):
    flock /tmp/bench.lock chrt -f 1 .venv/bin/python bench/models/run.py --out bench/RESULTS.md
    .venv/bin/python bench/models/run.py --quick   one small case (BERT, float32, batch 2),
        5 timed calls, under 3 minutes; writes into a temporary directory unless --out is given
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import report  # noqa: E402

MODELS = ("bert", "bert-sdpa", "gpt2", "t5-encoder", "llama", "llama-gqa-sdpa", "vit", "resnet18")
FULL_MODES = ("infer-b1", "infer-b4", "train-b2")
DTYPES = ("float32", "bfloat16")


def ensure_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("bench/models: installing matplotlib (a bench-only dependency, for the chart)",
              flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "matplotlib"], check=True)


def run_case(model, mode, dtype, reps, warmup, timeout):
    cmd = [sys.executable, os.path.join(HERE, "case.py"), model, mode, dtype,
           "--reps", str(reps), "--warmup", str(warmup)]
    start = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"model": model, "mode": mode, "dtype": dtype, "backends": {},
                "errors": {"case": f"timed out after {timeout} s"}}
    lines = p.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (p.stderr or "").strip().splitlines()[-15:]
        return {"model": model, "mode": mode, "dtype": dtype, "backends": {},
                "errors": {"case": f"process exited with {p.returncode}: " + "\n".join(tail)}}
    result["wall_s"] = time.time() - start
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="",
                        help="RESULTS.md to write (the chart and the JSON go beside it); "
                             "default bench/RESULTS.md, with --quick a temporary directory's, "
                             "so a quick check never overwrites the committed results")
    parser.add_argument("--quick", action="store_true", help="one small case, few repetitions")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--modes", default=",".join(FULL_MODES))
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per case")
    parser.add_argument("--gemm-json", default="",
                        help="results of gemm_efficiency.py to include in RESULTS.md")
    parser.add_argument("--notes", default="",
                        help="a markdown file of observations on this run, put after the "
                             "machine description")
    parser.add_argument("--from-json", default="",
                        help="only rewrite RESULTS.md and the chart from an earlier run's JSON")
    args = parser.parse_args()
    if not args.out:
        args.out = (os.path.join(tempfile.gettempdir(), "stax-models-quick", "RESULTS.md")
                    if args.quick else os.path.join(ROOT, "bench", "RESULTS.md"))
    ensure_matplotlib()

    out_json = os.path.splitext(args.out)[0] + ".json"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        results, machine, settings = saved["results"], saved["machine"], saved["settings"]
    else:
        if args.quick:
            cases = [("bert", "infer-b2", "float32")]
            args.reps, args.warmup = 5, 1
        else:
            cases = [(m, mode, d) for m in args.models.split(",") for d in args.dtypes.split(",")
                     for mode in args.modes.split(",")]
        machine = report.machine_description()
        settings = {"reps": args.reps, "warmup": args.warmup, "threads": 2,
                    "quick": args.quick, "started": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                    time.gmtime())}
        results = []
        for k, (model, mode, dtype) in enumerate(cases):
            print(f"[{k + 1}/{len(cases)}] {model} {mode} {dtype} ...", end=" ", flush=True)
            r = run_case(model, mode, dtype, args.reps, args.warmup, args.timeout)
            results.append(r)
            print(report.one_line(r), flush=True)
            with open(out_json, "w") as f:  # after every case: a long run is never lost
                json.dump({"machine": machine, "settings": settings, "results": results}, f,
                          indent=1)
    gemm = None
    if args.gemm_json and os.path.exists(args.gemm_json):
        with open(args.gemm_json) as f:
            gemm = json.load(f)
    chart = os.path.join(os.path.dirname(os.path.abspath(args.out)), "models_chart.png")
    report.chart(results, chart)
    notes = open(args.notes).read() if args.notes else ""
    with open(args.out, "w") as f:
        f.write(report.markdown(results, machine, settings, os.path.basename(chart), gemm,
                                notes))
    print(f"wrote {args.out}, {chart}, {out_json}")


if __name__ == "__main__":
    main()
