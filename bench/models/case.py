"""One benchmark case of bench/models in its own process: one model, one mode (inference at a
batch, or a training step), one dtype; eager, torch.compile's default backend (inductor) and
torch.compile(backend="stax") timed side by side, interleaved round-robin per repetition, each
round starting one backend later (no backend always runs after the same one).
Prints one JSON object on its last stdout line. run.py starts one process per case, so a crash
or a hang of one backend loses one case only, and every case starts from a fresh dynamo.

Usage: .venv/bin/python bench/models/case.py MODEL MODE DTYPE --reps N --warmup N
  MODE: infer-b1, infer-bN (N the batch) or train-bN.
  --stax-variant NAME=JSON (repeatable): one more backend, stax with those options, timed in the
  same round-robin (a before/after of an option measured interleaved), e.g.
  --stax-variant 'stax-frozen={"freeze_parameters": true}'; "dynamic": true compiles that variant with
  dynamic=True (a symbolic program against the static one). --backends: the subset to run.
  --seq N / --image N: the sequence length of the text models (default models.SEQ) and the
  image size of ResNet (default models.IMAGE; ViT's position embeddings fix its size)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Profiling counters on for this process (read once by the extension at the first query).
os.environ.setdefault("STAX_PROFILE", "1")

import torch  # noqa: E402

import models  # noqa: E402

BACKENDS = ("eager", "inductor", "stax")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def parse_mode(mode: str) -> tuple[bool, int]:
    kind, _, batch = mode.partition("-b")
    if kind not in ("infer", "train") or not batch.isdigit():
        raise SystemExit(f"mode must be infer-bN or train-bN, got {mode!r}")
    return kind == "train", int(batch)


def make_step(model, inputs, training: bool):
    """A callable running one call of the case: a forward under no_grad, or a forward and
    loss.sum().backward() with the gradients dropped first."""
    if not training:
        def infer():
            with torch.no_grad():
                return models.main_output(model(**inputs))
        return infer

    def train():
        for p in model.parameters():
            p.grad = None
        out = models.main_output(model(**inputs))
        out.sum().backward()
        return out
    return train


def percentile(sorted_values, q):
    k = (len(sorted_values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def summary(times):
    s = sorted(times)
    return {"median_ms": 1e3 * statistics.median(s), "p10_ms": 1e3 * percentile(s, 0.1),
            "p90_ms": 1e3 * percentile(s, 0.9), "mean_ms": 1e3 * statistics.fmean(s),
            "n": len(s)}


def compare(reference, value, dtype):
    """max |value - reference| / max |reference|: a coarse check that a backend computed the
    same function (the tolerance is the dtype's: different GEMM libraries sum differently)."""
    ref, val = reference.detach().float(), value.detach().float()
    if ref.shape != val.shape:
        return float("inf")
    scale = ref.abs().max().item() or 1.0
    return (ref - val).abs().max().item() / scale


def parse_variants(specs) -> dict:
    """--stax-variant NAME=JSON, each a dict of stax options by backend name."""
    variants = {}
    for spec in specs:
        name, sep, options = spec.partition("=")
        if not sep or not name or name in BACKENDS:
            raise SystemExit(f"--stax-variant must be NAME=JSON with a new NAME, got {spec!r}")
        try:
            variants[name] = json.loads(options)
        except json.JSONDecodeError as e:
            raise SystemExit(f"--stax-variant {name}: options are not JSON ({e})")
        if not isinstance(variants[name], dict):
            raise SystemExit(f"--stax-variant {name}: options must be a JSON object")
    return variants


def run_case(model_name, mode, dtype_name, reps, warmup, backends=BACKENDS, variants=None):
    from stax import _C, backend as stax_backend
    from stax.explain_report import ExplainResult

    torch.set_num_threads(2)
    torch._dynamo.config.cache_size_limit = 64
    training, batch = parse_mode(mode)
    dtype = DTYPES[dtype_name]
    model, kind, vocab = models.build(model_name, dtype)
    model.train(training)
    inputs = models.make_inputs(kind, vocab, batch, dtype)

    result = {"model": model_name, "mode": mode, "dtype": dtype_name, "threads": 2,
              "backends": {}, "errors": {}}
    variants = variants or {}
    steps, outputs = {}, {}
    for name in list(backends) + list(variants):
        if name == "eager":
            fn = model
        elif name in variants:
            # "dynamic": true compiles the variant with dynamic=True (issue 33: the one program
            # for every size against the static program of this size); the rest are stax options.
            options = dict(variants[name])
            dynamic = bool(options.pop("dynamic", False))
            fn = torch.compile(model, backend="stax", dynamic=dynamic, options=options)
        else:
            fn = torch.compile(model, backend=name, dynamic=False)
        steps[name] = make_step(fn, inputs, training)

    records: list = []
    for name in list(steps):
        if name == "stax":
            with stax_backend._recorder_lock:
                stax_backend._recorders.append(records)
        try:
            start = time.perf_counter()
            outputs[name] = steps[name]()
            result["backends"][name] = {"first_call_s": time.perf_counter() - start}
        except Exception as e:  # recorded, the other backends go on
            result["errors"][name] = f"{type(e).__name__}: {str(e).strip()[:2000]}"
            result["errors"][name + "_traceback"] = traceback.format_exc()[-4000:]
            steps.pop(name)
        finally:
            if name == "stax":
                with stax_backend._recorder_lock:
                    stax_backend._recorders.remove(records)

    if "eager" in outputs:
        for name in outputs:
            if name != "eager":
                result["backends"][name]["max_rel_diff_vs_eager"] = compare(
                    outputs["eager"], outputs[name], dtype)
    if records:
        report = ExplainResult(records)
        result["stax_graphs"] = [{"kind": r.kind, "name": r.name, "regions": len(r.regions)}
                                 for r in records]
        result["stax_ops"] = sum(report.stax_ops.values())
        result["fallback_ops"] = dict(report.fallback_ops.most_common())
        result["fallback_reasons"] = {op: dict(c) for op, c in report.fallback_reasons.items()}

    for _ in range(warmup):
        for name, step in steps.items():
            step()
    times = {name: [] for name in steps}
    _C.reset_profile_counters()
    names = list(steps)
    for rep in range(reps):
        # Round-robin, so that drift hits every backend alike, starting one backend later each
        # round: a backend run right after another measured 5-15% faster than in the first
        # place (two Stax variants with identical plans), and a fixed order gave that to the
        # same backends every round.
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            steps[name]()
            times[name].append(time.perf_counter() - start)
    counters = _C.profile_counters()
    for name, t in times.items():
        result["backends"][name].update(summary(t))
    # The counters are the process's: with variants they sum several stax backends.
    if "stax" in times and counters["enabled"] and not variants:
        per_call = lambda ns: ns / 1e6 / reps
        total = result["backends"]["stax"]["mean_ms"]
        entry, gemm = per_call(counters["entry_ns"]), per_call(counters["external_ns"])
        result["stax_split_ms"] = {
            "total_mean": total, "gemm_library": gemm, "stax_kernels": entry - gemm,
            "rest": total - entry,
            "entry_calls_per_call": counters["entry_calls"] / reps,
            "library_calls_per_call": counters["external_calls"] / reps}
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=sorted(models.BUILDERS))
    parser.add_argument("mode")
    parser.add_argument("dtype", choices=sorted(DTYPES))
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--stax-variant", action="append", default=[], metavar="NAME=JSON")
    parser.add_argument("--seq", type=int, default=models.SEQ)
    parser.add_argument("--image", type=int, default=models.IMAGE)
    args = parser.parse_args()
    if args.image != models.IMAGE and args.model == "vit":
        raise SystemExit("--image: ViT's position embeddings are made for its configured size")
    models.SEQ, models.IMAGE = args.seq, args.image
    backends = [b for b in args.backends.split(",") if b]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        raise SystemExit(f"--backends: unknown {', '.join(unknown)} (known: {', '.join(BACKENDS)})")
    result = run_case(args.model, args.mode, args.dtype, args.reps, args.warmup, backends,
                      parse_variants(args.stax_variant))
    result["seq"], result["image"] = args.seq, args.image
    print(json.dumps(result))


if __name__ == "__main__":
    main()
