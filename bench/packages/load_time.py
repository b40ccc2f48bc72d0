"""How long an ahead-of-time package takes to load and run its first call in a fresh process
without Python (issue 34's target: under 50 ms for a 2-layer transformers model, no compile
at load): 2-layer BERT-base and GPT-2 (random weights from their configs) are exported with
stax.aot_compile, examples/cpp_package is built against the installed library, and each
package is loaded and run by a fresh process REPS times, the models interleaved. Prints the
medians and p10-p90 of the load, the first call and their sum, and writes them as JSON.

    chrt -f 1 .venv/bin/python bench/packages/load_time.py --out bench/packages/zen4.json

Needs build/ (scripts/setup.sh) and .venv (scripts/setup_python.sh)."""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import tempfile

import torch

import stax
import safetensors.torch
from transformers import BertConfig, BertModel, GPT2Config, GPT2Model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def models():
    torch.manual_seed(0)
    bert = BertModel(BertConfig(num_hidden_layers=2)).eval()
    gpt2 = GPT2Model(GPT2Config(n_layer=2, use_cache=False)).eval()
    return {"bert-2l": bert, "gpt2-2l": gpt2}


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="stax-load-time-")
    prefix = os.path.join(work, "install")
    subprocess.run(["cmake", "--install", os.path.join(ROOT, "build"), "--prefix", prefix],
                   check=True, capture_output=True)
    build = os.path.join(work, "example")
    subprocess.run(["cmake", "-S", os.path.join(ROOT, "examples", "cpp_package"), "-B", build,
                    "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"], check=True,
                   capture_output=True)
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True)
    exe = os.path.join(build, "run_package")
    cases = {}
    for name, model in models().items():
        ids = torch.randint(0, 1000, (1, args.length))
        pkg = stax.aot_compile(model, (ids,), os.path.join(work, f"{name}.staxpkg"))
        with torch.no_grad():
            out = model(ids)
        expected = {f"expected.{k}": v.contiguous() for k, v in enumerate(
            [out.last_hidden_state] + ([out.pooler_output] if name.startswith("bert") else []))}
        path = os.path.join(work, f"{name}.safetensors")
        safetensors.torch.save_file({"input.0": ids, **expected,
                                     "tolerance": torch.tensor([1e-4, 1e-4], dtype=torch.float64)},
                                    path)
        cases[name] = (pkg, path, os.path.getsize(pkg))
    times = {name: {"load_ms": [], "first_call_ms": [], "total_ms": []} for name in cases}
    pattern = re.compile(r"loaded in ([\d.]+) ms, first call ([\d.]+) ms")
    for rep in range(args.reps + 1):
        for name, (pkg, path, _) in cases.items():
            out = subprocess.run([exe, pkg, path], capture_output=True, text=True, check=True)
            m = pattern.search(out.stdout)
            if rep == 0:
                continue  # the page cache warmed
            load, first = float(m.group(1)), float(m.group(2))
            times[name]["load_ms"].append(load)
            times[name]["first_call_ms"].append(first)
            times[name]["total_ms"].append(load + first)
    report = {"cpu": cpu_name(), "length": args.length, "reps": args.reps, "models": {}}
    print(f"{report['cpu']}: fresh process per run, {args.reps} runs, batch 1 x {args.length}")
    print("| model | package MiB | load ms | first call ms | load + first call ms |")
    print("|---|---|---|---|---|")
    for name, t in times.items():
        row = {k: {"median": statistics.median(v), "p10": percentile(v, 0.1),
                   "p90": percentile(v, 0.9)} for k, v in t.items()}
        report["models"][name] = {"package_bytes": cases[name][2], **row}
        cells = [f"{row[k]['median']:.1f} ({row[k]['p10']:.1f}-{row[k]['p90']:.1f})"
                 for k in ("load_ms", "first_call_ms", "total_ms")]
        print(f"| {name} | {cases[name][2] / 2**20:.0f} | " + " | ".join(cells) + " |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
