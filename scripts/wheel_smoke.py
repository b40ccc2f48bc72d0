"""Run by scripts/wheel_check.sh in a fresh virtual environment holding only the wheel and
what it declares: the backend registered through the wheel's entry point (no `import stax`
before torch.compile), a small model's forward and backward in Stax matching eager, and an
ahead-of-time package written and loaded. Exits non-zero on any mismatch."""

import os
import sys
import tempfile

import torch

model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                            torch.nn.Linear(64, 10))
x = torch.randn(8, 32)
compiled = torch.compile(model, backend="stax")  # found through the entry point
out = compiled(x)
expected = model(x)
torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
out.sum().backward()
grad = model[0].weight.grad.clone()
model.zero_grad()
expected.sum().backward()
torch.testing.assert_close(grad, model[0].weight.grad, rtol=1e-4, atol=1e-5)

import stax  # noqa: E402

assert os.path.dirname(stax.__file__).endswith(os.path.join("site-packages", "stax")), stax.__file__
report = stax.explain(model, x)
assert sum(report.stax_ops.values()) > 0 and report.fallback_fraction == 0, str(report)

with tempfile.TemporaryDirectory() as d:
    path = stax.aot_compile(model.eval(), (x,), os.path.join(d, "mlp.staxpkg"))
    loaded = stax.load(path)
    torch.testing.assert_close(loaded(x), model(x), rtol=1e-4, atol=1e-5)
print(f"wheel_smoke: stax {stax.__version__} from {os.path.dirname(stax.__file__)} with torch "
      f"{torch.__version__}: torch.compile, backward and a package match eager")
sys.exit(0)
