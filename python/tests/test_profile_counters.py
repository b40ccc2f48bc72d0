"""stax._C's profiling counters (src/driver/profile.h), which bench/models uses to split Stax's
time: with STAX_PROFILE=1 they count the compiled entry's calls and time and the library calls
(an mm, run by oneDNN) inside it; without it they stay zero. STAX_PROFILE is read once per
process, so each setting runs in its own interpreter."""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import ctypes, json, sys
from stax import _C

GRAPH = '''def g(a: f32[64, 32], b: f32[32, 16]):
    m = mm(a, b)
    return m
'''

def buffer(nbytes):
    raw = ctypes.create_string_buffer(nbytes + 64)
    return raw, (ctypes.addressof(raw) + 63) // 64 * 64

compiled = _C.compile(GRAPH, cache_dir=sys.argv[1], num_threads=1)
(ra, a), (rb, b) = buffer(64 * 32 * 4), buffer(32 * 16 * 4)
slots = [buffer(n) for n in compiled.output_slot_bytes]
run = lambda: compiled.run([a, b], [s[1] for s in slots], 1)
result = {"before": _C.profile_counters()}
run(); run()
result["after_two_runs"] = _C.profile_counters()
_C.reset_profile_counters()
result["after_reset"] = _C.profile_counters()
_C.set_profiling(False)
run()
result["after_switched_off"] = _C.profile_counters()
_C.set_profiling(True)
run()
result["after_switched_on"] = _C.profile_counters()
print(json.dumps(result))
"""

ZERO = {"entry_ns": 0, "entry_calls": 0, "external_ns": 0, "external_calls": 0}


def counters(tmp_path, profile):
    env = {k: v for k, v in os.environ.items() if k != "STAX_PROFILE"}
    if profile is not None:
        env["STAX_PROFILE"] = profile
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "cache")], env=env,
                         capture_output=True, text=True, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return {k: ({c: v[c] for c in ZERO}, v["enabled"]) for k, v in result.items()}


def test_counters_move_when_stax_profile_is_1(tmp_path):
    c = counters(tmp_path, "1")
    assert c["before"] == (ZERO, True)
    two, enabled = c["after_two_runs"]
    assert enabled
    assert two["entry_calls"] == 2 and two["external_calls"] == 2
    # The library call runs inside the entry, so its time is part of the entry's.
    assert 0 < two["external_ns"] <= two["entry_ns"]
    assert c["after_reset"] == (ZERO, True)
    assert c["after_switched_off"] == (ZERO, False)
    on, enabled = c["after_switched_on"]
    assert enabled and on["entry_calls"] == 1 and on["external_calls"] == 1
    assert 0 < on["external_ns"] <= on["entry_ns"]


def test_counters_stay_zero_without_stax_profile(tmp_path):
    for profile in (None, "0"):
        c = counters(tmp_path, profile)
        for key in ("before", "after_two_runs", "after_reset", "after_switched_off"):
            assert c[key] == (ZERO, False), (profile, key)
        # set_profiling turns them on whatever the environment said.
        on, enabled = c["after_switched_on"]
        assert enabled and on["entry_calls"] == 1 and on["external_calls"] == 1
