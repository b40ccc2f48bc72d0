"""The README's quickstarts run verbatim (issue 34, point 6): every block marked
`<!-- quickstart:python -->`, `<!-- quickstart:cpp FILE -->` (written to FILE) or
`<!-- quickstart:bash -->` runs in order, in a fresh folder that, like the repository root,
has build/ and examples/ (links to the repository's), with this environment's Python; a block
that fails fails the test with its output."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BLOCK = re.compile(r"<!-- quickstart:(\w+)(?: (\S+))? -->\n```\w*\n(.*?)```", re.S)


def quickstarts():
    with open(os.path.join(ROOT, "README.md")) as f:
        return BLOCK.findall(f.read())


def test_readme_has_a_quickstart_for_each_kind_of_user():
    kinds = [kind for kind, _, _ in quickstarts()]
    assert kinds.count("python") >= 2 and "cpp" in kinds and kinds.count("bash") >= 2, kinds


def test_readme_quickstarts_run_verbatim(tmp_path):
    for name in ("build", "examples"):
        os.symlink(os.path.join(ROOT, name), tmp_path / name)
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    for k, (kind, filename, code) in enumerate(quickstarts()):
        if kind == "cpp":
            (tmp_path / filename).write_text(code)
            continue
        cmd = [sys.executable, "-c", code] if kind == "python" else ["bash", "-euo", "pipefail",
                                                                      "-c", code]
        out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=900)
        assert out.returncode == 0, f"quickstart {k} ({kind}):\n{code}\n{out.stdout}\n{out.stderr}"
        if kind == "python" and "aot_compile" in code:
            assert "torch.Size([1, 40, 768])" in out.stdout, out.stdout
        if kind == "bash" and "./app" in code:
            assert "2 outputs, the first 1 x 20 x 768" in out.stdout, out.stdout
        if kind == "bash" and "rows.staxpkg" in code:
            assert "MISMATCH" not in out.stdout and "package /tmp/rows.staxpkg" in out.stdout
