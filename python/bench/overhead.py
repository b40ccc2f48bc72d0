"""Per-call overhead of a compiled one-op graph (x + 1.0 on 16 floats), eager vs the default
backend (inductor) vs Stax, in one run, interleaved rounds, median and spread:

- "backend call": the callable each backend returns for the same Dynamo FX graph, called
  directly (Python -> compiled wrapper -> Python), which is what a backend controls;
- "torch.compile": the whole compiled function, Dynamo's guards and frame handling
  included (the same for every backend).

Run under `chrt -f 1` on a shared machine."""

import statistics
import sys
import time

import torch
from torch._inductor.compile_fx import compile_fx

import stax
from stax.backend import stax_backend


def per_call_us(fn, args, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e6


def one_op(t):
    return t + 1.0


def backend_callable(backend, x):
    """What `backend` returns for one_op's Dynamo graph, compiled inside torch.compile (so
    in Dynamo's tracing context, as every real compile is)."""
    returned = []

    def capture(gm, example_inputs):
        returned.append(backend(gm, example_inputs))
        return returned[0]

    torch._dynamo.reset()
    torch.compile(one_op, backend=capture)(x)
    return returned[0]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    calls = 3000
    x = torch.randn(16)
    with torch.no_grad():
        inductor_fn = backend_callable(compile_fx, x)
        stax_fn = backend_callable(stax_backend, x)
        backend_calls = {
            "eager": (one_op, (x,)),
            "inductor": (inductor_fn, (x,)),
            "stax": (stax_fn, (x,)),
        }
        whole = {"eager": one_op}
        for backend in ("inductor", "stax"):
            torch._dynamo.reset()
            whole[backend] = torch.compile(one_op, backend=backend)
        for name, (fn, args) in backend_calls.items():
            torch.testing.assert_close(fn(*args)[0] if name != "eager" else fn(*args), x + 1.0)
        for fn in whole.values():
            torch.testing.assert_close(fn(x), x + 1.0)
        series = {f"{k} backend call": (fn, args) for k, (fn, args) in backend_calls.items()}
        series.update({f"{k} torch.compile": (fn, (x,)) for k, fn in whole.items() if k != "eager"})
        times = {k: [] for k in series}
        for fn, args in series.values():
            per_call_us(fn, args, calls)  # warm up
        for _ in range(rounds):
            for k, (fn, args) in series.items():
                times[k].append(per_call_us(fn, args, calls))
    print(f"one-op graph (x + 1.0, 16 floats), {torch.get_num_threads()} threads, "
          f"{rounds} interleaved rounds of {calls} calls: microseconds per call")
    for k, ts in times.items():
        print(f"  {k:26s} median {statistics.median(ts):7.2f}  min {min(ts):7.2f}  "
              f"max {max(ts):7.2f}")
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"  backend call, stax / inductor: {med['stax backend call'] / med['inductor backend call']:.2f}")
    print(f"  torch.compile, stax / inductor: "
          f"{med['stax torch.compile'] / med['inductor torch.compile']:.2f}")


if __name__ == "__main__":
    main()
