"""torch.compile(backend="stax") on a small transformer block, inference: the time per
call of eager PyTorch, the default backend (inductor) and Stax side by side, interleaved,
and the compile time of each. Results are checked against eager first."""

import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import stax  # noqa: E402,F401  (registers the backend)
from models import DecoderBlock  # noqa: E402


def main():
    torch.manual_seed(0)
    model = DecoderBlock(dim=128, heads=4).eval()
    x = torch.randn(8, 64, 128)
    runners = {"eager": model}
    compile_seconds = {"eager": 0.0}
    with torch.no_grad():
        expected = model(x)
        for backend in ("inductor", "stax"):
            torch._dynamo.reset()
            fn = torch.compile(model, backend=backend)
            start = time.perf_counter()
            got = fn(x)  # the first call compiles
            compile_seconds[backend] = time.perf_counter() - start
            torch.testing.assert_close(got, expected)
            runners[backend] = fn
        rounds, calls = 7, 20
        times = {name: [] for name in runners}
        for _ in range(rounds):
            for name, fn in runners.items():  # interleaved, so drift hits all alike
                start = time.perf_counter()
                for _ in range(calls):
                    fn(x)
                times[name].append((time.perf_counter() - start) / calls * 1e6)
    print(f"\nDecoderBlock(dim=128, heads=4), input {tuple(x.shape)}, "
          f"{torch.get_num_threads()} threads, inference; median of {rounds} rounds "
          f"(min-max), microseconds per call:")
    base = statistics.median(times["eager"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:9s} {med:9.1f} us  ({min(ts):.1f}-{max(ts):.1f})  "
              f"{base / med:5.2f}x eager   compile {compile_seconds[name]:6.2f} s")
    with torch.no_grad():
        print()
        print(stax.explain(model, x))


if __name__ == "__main__":
    main()
