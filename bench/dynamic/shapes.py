"""Shapes that change (issue 33's targets): what a new size costs each backend.

1. New lengths: a bench/models text model (2 layers, batch 1) called at 16 sequence lengths in
   turn; per backend the first call at each length (ms), the compiles it took (Dynamo graphs;
   for Stax also its own per-shape compiles), and the median of 5 calls at the last length.
   With --model resnet18 (bench/models' ResNet-18, batch 1): images of --sizes in turn
   (square), the same table.
2. Greedy decoding: `model.generate(max_new_tokens=N, do_sample=False)` with the model's
   forward compiled, transformers' default dynamic KV cache and its static cache
   (`cache_implementation="static"`); ms per new token on a second generate (the first warms
   up), and the compiles of both.

Eager, the default backend (inductor) and Stax in one process, one after the other
(`torch._dynamo.reset()` between them), 2 threads, run under `chrt -f 1`. Prints a Markdown
table per part.

Usage: chrt -f 1 .venv/bin/python bench/dynamic/shapes.py [--model gpt2] [--lengths 64:80]
       [--new-tokens 64]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))

import torch  # noqa: E402

import models  # noqa: E402

BACKENDS = ("eager", "inductor", "stax")


class Counted:
    """A torch.compile backend that counts the graphs Dynamo hands it (and, for Stax, the
    programs it compiles, stax._C.compile: one per region of a static graph; one per region of
    a graph with symbolic sizes, or one per region and size where Stax compiles it per size)."""

    def __init__(self, name: str):
        self.name = name
        self.graphs = 0
        self.stax_compiles = 0
        if name == "stax":
            import stax

            real = getattr(stax._C.compile, "real", stax._C.compile)
            counter = self

            def counted(*args, **kwargs):
                counter.stax_compiles += 1
                return real(*args, **kwargs)

            counted.real = real
            stax._C.compile = counted

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        if self.name == "inductor":
            from torch._inductor.compile_fx import compile_fx

            return compile_fx(gm, example_inputs)
        from stax.backend import stax_backend

        return stax_backend(gm, example_inputs)

    def compiles(self) -> str:
        if self.name == "stax":
            return f"{self.graphs} graphs, {self.stax_compiles} compiles"
        return f"{self.graphs} graphs"


def compiled_forward(model, backend: str):
    if backend == "eager":
        return model.forward, None
    torch._dynamo.reset()
    counter = Counted(backend)
    return torch.compile(model.forward, backend=counter), counter


def new_lengths(model_name: str, lengths: list[int]) -> None:
    model, kind, vocab = models.build(model_name, torch.float32)
    model.eval()
    g = torch.Generator().manual_seed(1)
    if kind == "image":
        inputs = {n: {"pixel_values": torch.randn(1, 3, n, n, generator=g)} for n in lengths}
    else:
        inputs = {n: {"input_ids": torch.randint(0, vocab, (1, n), generator=g)} for n in lengths}
    rows = {}
    for backend in BACKENDS:
        forward, counter = compiled_forward(model, backend)
        firsts = []
        with torch.no_grad():
            for n in lengths:
                start = time.perf_counter()
                forward(**inputs[n])
                firsts.append((time.perf_counter() - start) * 1e3)
            steady = []
            for _ in range(5):
                start = time.perf_counter()
                forward(**inputs[lengths[-1]])
                steady.append((time.perf_counter() - start) * 1e3)
        rows[backend] = (firsts, statistics.median(steady), counter.compiles() if counter else "-")
    what = "image sizes" if kind == "image" else "lengths"
    print(f"\n### {model_name}, batch 1, {what} {' '.join(map(str, lengths))} in turn\n")
    print(f"| backend | first call at each of the {what}, ms | median of the 3rd.. | "
          "steady call at the last, ms | compiles |")
    print("|---|---|---|---|---|")
    for backend, (firsts, steady, compiles) in rows.items():
        shown = " ".join(f"{t:.0f}" for t in firsts)
        print(f"| {backend} | {shown} | {statistics.median(firsts[2:]):.0f} | {steady:.1f} | "
              f"{compiles} |", flush=True)


def decoding(model_name: str, new_tokens: int) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    if model_name == "gpt2":
        cfg = GPT2Config(n_embd=768, n_head=12, n_layer=2, n_positions=1024,
                         attn_implementation="eager")
        model = GPT2LMHeadModel(cfg)
    else:
        cfg = LlamaConfig(hidden_size=1024, intermediate_size=2752, num_attention_heads=16,
                          num_key_value_heads=16, num_hidden_layers=2, vocab_size=32000,
                          attn_implementation="eager")
        model = LlamaForCausalLM(cfg)
    model.eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, 32), generator=torch.Generator().manual_seed(2))
    print(f"\n### {model_name}, greedy decoding of {new_tokens} tokens after a 32-token prompt\n")
    print("| cache | backend | ms per token (second generate) | first generate, s | compiles | "
          "tokens equal eager's |")
    print("|---|---|---|---|---|---|")
    for cache in ("dynamic", "static"):
        extra = {"cache_implementation": "static"} if cache == "static" else {}
        reference = None
        for backend in BACKENDS:
            original = model.forward
            forward, counter = compiled_forward(model, backend)
            model.forward = forward
            try:
                with torch.no_grad():
                    start = time.perf_counter()
                    out = model.generate(prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                         do_sample=False, **extra)
                    first = time.perf_counter() - start
                    start = time.perf_counter()
                    out = model.generate(prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                         do_sample=False, **extra)
                    per_token = (time.perf_counter() - start) * 1e3 / new_tokens
            finally:
                model.forward = original
            if reference is None:
                reference = out
            same = "yes" if torch.equal(out, reference) else "no"
            print(f"| {cache} | {backend} | {per_token:.1f} | {first:.1f} | "
                  f"{counter.compiles() if counter else '-'} | {same} |", flush=True)


def main():
    global BACKENDS
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="gpt2", choices=("gpt2", "llama", "resnet18"))
    parser.add_argument("--lengths", default="64:80", help="first:end (end excluded)")
    parser.add_argument("--sizes", default="224,192,256,160,288,208",
                        help="image sizes in turn (resnet18)")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--parts", default="lengths,decoding")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    args = parser.parse_args()
    BACKENDS = tuple(args.backends.split(","))
    torch.set_num_threads(2)
    first, end = (int(v) for v in args.lengths.split(":"))
    print(f"CPU: {_cpu()}; torch {torch.__version__}; 2 threads; "
          f"recompile_limit {torch._dynamo.config.recompile_limit}")
    if "lengths" in args.parts:
        sizes = ([int(v) for v in args.sizes.split(",")] if args.model == "resnet18"
                 else list(range(first, end)))
        new_lengths(args.model, sizes)
    if "decoding" in args.parts:
        decoding(args.model, args.new_tokens)


def _cpu() -> str:
    """The model name, with the family and model where the name does not tell the kind (AMD's
    "AMD EPYC" is Zen 2, 4 or 5 alike)."""
    fields = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    return (f"{fields.get('model name', 'unknown')} (family {fields.get('cpu family', '?')}, "
            f"model {fields.get('model', '?')})")


if __name__ == "__main__":
    main()
