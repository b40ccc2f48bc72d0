"""The same programs as tests/gpu/gpu_check.cpp in PyTorch on the same card and in the same
run (scripts/gpu_check.sh): eager and torch.compile's default backend (Inductor), each timed
as gpu_check times Stax: 5 warm-up calls, then the mean of 50 calls with one synchronize at the
end (launch overhead included). Prints one line per program and backend."""

import sys
import time

import torch


def example_7_2(x):
    e = x.exp()
    return e.sum(-1), e.amax(-1)


def softmax(x):
    m = x.amax(-1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)


def layernorm(x):
    mu = x.mean(-1, keepdim=True)
    c = x - mu
    var = (c * c).mean(-1, keepdim=True)
    return c * torch.rsqrt(var + 1e-5)


CASES = [
    ("example_7_2", example_7_2, (64, 128), torch.float32),
    ("example_7_2_large", example_7_2, (4096, 1024), torch.float32),
    ("example_7_2_16384x1024", example_7_2, (16384, 1024), torch.float32),
    ("example_7_2_32768x4096", example_7_2, (32768, 4096), torch.float32),
    ("softmax", softmax, (4096, 1024), torch.float32),
    ("layernorm", layernorm, (4096, 1024), torch.float32),
    ("softmax_bf16_tail", softmax, (257, 1000), torch.bfloat16),
    ("softmax_f16_wide", softmax, (64, 5000), torch.float16),
]


def timed(fn, x, runs=50):
    for _ in range(5):
        fn(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(runs):
        fn(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / runs * 1e6


def main():
    only = sys.argv[1:] or None
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name, fn, shape, dtype in CASES:
        if only and name not in only:
            continue
        x = torch.randn(shape, device="cuda", dtype=dtype)
        compiled = torch.compile(fn)
        for label, f in (("eager", fn), ("inductor", compiled)):
            print(f"{name}: {label} {timed(f, x):.2f} us/call", flush=True)


if __name__ == "__main__":
    main()
