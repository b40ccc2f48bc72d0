"""freeze_parameters=True (issue 32, docs/freeze_parameters.md): convolution weights that are
nn.Parameters or registered buffers are packed once into oneDNN's format, and a check before
every call packs them again when the tensor passed is not the one packed, unchanged (version
counter, data pointer, dtype, thread count). Frozen results have the same bits as unfrozen
ones; explain says which weights are frozen; every change that bumps a version counter or
replaces the tensor is seen; a write through `p.data` is documented as not seen until
stax.unfreeze() (pinned here); weights that require grad in training are never packed.

These tests need Stax (they look at what it packed), so they run under the "stax" backend only.
"""

import time

import pytest
import torch
import torch.nn.functional as F

import stax
from stax import _C

FROZEN = "weights packed once (frozen)"


@pytest.fixture(autouse=True)
def stax_only(backend):
    if backend != "stax":
        pytest.skip("freeze_parameters is an option of the stax backend")


def convnet(dtype=torch.bfloat16, channels_last=False):
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 3, padding=1, bias=False), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 16, 1, stride=2)).eval().to(dtype)
    x = torch.randn(2, 16, 12, 12, dtype=dtype)
    if channels_last:
        m = m.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    return m, x


def frozen_and_plain(m):
    frozen = torch.compile(m, backend="stax", options={"freeze_parameters": True})
    plain = torch.compile(m, backend="stax")
    return frozen, plain


def frozen_lines(result) -> list:
    return [line for line in str(result).splitlines() if "frozen" in line]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("channels_last", [False, True])
def test_frozen_convolutions_give_the_same_bits(dtype, channels_last):
    m, x = convnet(dtype, channels_last)
    frozen, plain = frozen_and_plain(m)
    with torch.no_grad():
        expected = plain(x)
        for _ in range(3):  # the first call packs, the later ones read the packed copies
            assert torch.equal(frozen(x), expected)
        other = torch.randn_like(x)
        assert torch.equal(frozen(other), plain(other))


def test_explain_says_which_weights_are_frozen():
    m, x = convnet()
    with torch.no_grad():
        result = stax.explain(m, x, options={"freeze_parameters": True})
        lines = frozen_lines(result)
        assert len(lines) == 3, str(result)
        for name, line in zip(("fn.0.weight", "fn.2.weight", "fn.4.weight"), lines):
            assert line.lstrip().startswith("frozen:"), line
            assert f"weights {name}:" in line and FROZEN in line, line
            assert "reordered per call" not in line, line
        # Without the option nothing is packed, and explain says nothing about it.
        assert frozen_lines(stax.explain(m, x)) == []


def test_library_call_of_a_compiled_graph():
    """The extension's own entries: a site's weights packed from the weight input's pointer,
    the same bits as the per-call reorder, unpacked again; bad sites are refused."""
    text = ("def g(x: bf16[1, 16, 8, 8], w: bf16[32, 16, 3, 3], b: bf16[32]):\n"
            "    y = convolution(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
            "    return y\n")
    compiled = _C.compile(text, "g", num_threads=2)
    assert compiled.weight_sites == [(0, compiled.weight_sites[0][1], 1, "w", "")]
    x = torch.randn(1, 16, 8, 8, dtype=torch.bfloat16)
    w = torch.randn(32, 16, 3, 3, dtype=torch.bfloat16)
    b = torch.randn(32, dtype=torch.bfloat16)

    def run():
        out = torch.empty(1, 32, 8, 8, dtype=torch.bfloat16)
        compiled.run([x.data_ptr(), w.data_ptr(), b.data_ptr()], [out.data_ptr()], 2)
        return out

    expected = run()
    assert "reordered per call" in compiled.library_call(0)
    assert compiled.pack_weights(0, w.data_ptr(), 2) >= w.numel() * 2
    assert FROZEN in compiled.library_call(0)
    assert torch.equal(run(), expected)
    compiled.unpack_weights(0)
    assert "reordered per call" in compiled.library_call(0)
    with pytest.raises(ValueError, match="site 3"):
        compiled.pack_weights(3, w.data_ptr(), 2)
    with pytest.raises(ValueError, match="null"):
        compiled.pack_weights(0, 0, 2)
    with pytest.raises(ValueError, match="no library call site 1"):
        compiled.unpack_weights(1)


def _mul(m):
    m[0].weight.mul_(2)


def _copy(m):
    m[0].weight.copy_(torch.randn_like(m[0].weight))


def _load_state_dict(m):
    state = {k: torch.randn_like(v) for k, v in m.state_dict().items()}
    m.load_state_dict(state)


def _through_detach(m):
    m[2].weight.detach().add_(1)  # detach() shares the version counter


def _sgd_step(m):
    # An optimizer step as in fine-tuning, outside any compiled call.
    m[0].weight.grad = torch.ones_like(m[0].weight)
    torch.optim.SGD(m.parameters(), lr=0.5).step()


@pytest.mark.parametrize("update", [_mul, _copy, _load_state_dict, _through_detach, _sgd_step],
                         ids=lambda f: f.__name__.lstrip("_"))
def test_in_place_changes_are_seen(update):
    m, x = convnet()
    frozen, plain = frozen_and_plain(m)
    with torch.no_grad():
        before = frozen(x)
        assert torch.equal(before, plain(x))
        with torch.enable_grad() if update is _sgd_step else torch.no_grad():
            update(m)
        after = frozen(x)
        assert torch.equal(after, plain(x))
        assert not torch.equal(after, before)


def test_replaced_parameter_is_seen():
    m, x = convnet()
    frozen, plain = frozen_and_plain(m)
    with torch.no_grad():
        before = frozen(x)
        m[0].weight = torch.nn.Parameter(torch.randn_like(m[0].weight))
        after = frozen(x)
        assert torch.equal(after, plain(x))
        assert not torch.equal(after, before)
        # Swapping a parameter's storage (`p.data = other`) keeps the object and bumps no
        # version counter: the data pointer shows it.
        m[2].weight.data = torch.randn_like(m[2].weight)
        assert torch.equal(frozen(x), plain(x))


def test_data_writes_are_not_seen_until_unfreeze():
    """The documented limit: `p.data` is another tensor with its own version counter, so a
    write through it does not reach the check. The frozen graph keeps computing with the
    packed weights until stax.unfreeze() says they changed."""
    m, x = convnet()
    frozen, plain = frozen_and_plain(m)
    with torch.no_grad():
        before = frozen(x)
        m[0].weight.data.mul_(2)
        assert torch.equal(frozen(x), before)  # stale, as docs/freeze_parameters.md says
        assert not torch.equal(plain(x), before)
        assert stax.unfreeze(m[0]) == 1
        assert torch.equal(frozen(x), plain(x))
        # stax.unfreeze() without an argument drops every packed weight.
        m[2].weight.data.mul_(2)
        assert stax.unfreeze() >= 3
        assert torch.equal(frozen(x), plain(x))
    with pytest.raises(TypeError, match="nn.Module, a tensor or nothing"):
        stax.unfreeze("model")


def test_training_does_not_freeze():
    m, x = convnet(torch.float32)
    m.train()
    x.requires_grad_(True)
    result = stax.explain(m, x, options={"freeze_parameters": True}, backward=True)
    lines = frozen_lines(result)
    assert lines, str(result)
    assert all(line.lstrip().startswith("not frozen:") for line in lines), str(result)
    assert any("requires grad in training" in line for line in lines), str(result)
    assert any("a backward pass" in line for line in lines), str(result)
    # And the training step computes what the unfrozen one does.
    frozen, plain = frozen_and_plain(m)
    outs = []
    for fn in (frozen, plain):
        m.zero_grad()
        fn(x).sum().backward()
        outs.append([p.grad.clone() for p in m.parameters()])
    for a, b in zip(*outs):
        assert torch.equal(a, b)


def test_parameters_that_do_not_require_grad_freeze_in_training():
    """A frozen backbone in fine-tuning: its weights require no grad, so AOTAutograd's forward
    graph may pack them while the head trains."""
    m, x = convnet(torch.float32)
    for p in m[0].parameters():
        p.requires_grad_(False)
    result = stax.explain(m, x, options={"freeze_parameters": True}, backward=True)
    lines = frozen_lines(result)
    assert any(line.lstrip().startswith("frozen:") and "fn.0.weight" in line for line in lines), \
        str(result)
    assert any("fn.2.weight" in line and "requires grad in training" in line
               for line in lines), str(result)


def test_buffers_freeze_and_activations_do_not():
    class BufferConv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("kernel", torch.randn(8, 4, 3, 3, dtype=torch.bfloat16))

        def forward(self, x, w):
            return F.conv2d(F.conv2d(x, self.kernel, padding=1), w, padding=1)

    m = BufferConv()
    x = torch.randn(1, 4, 10, 10, dtype=torch.bfloat16)
    w = torch.randn(8, 8, 3, 3, dtype=torch.bfloat16)
    with torch.no_grad():
        result = stax.explain(m, x, w, options={"freeze_parameters": True})
        lines = frozen_lines(result)
        assert any(line.lstrip().startswith("frozen:") and "self.kernel" in line
                   for line in lines), str(result)
        assert any("not an nn.Parameter or registered buffer" in line for line in lines), \
            str(result)
        frozen = torch.compile(m, backend="stax", options={"freeze_parameters": True})
        plain = torch.compile(m, backend="stax")
        assert torch.equal(frozen(x, w), plain(x, w))
        m.kernel.mul_(-1)
        w2 = torch.randn_like(w)
        assert torch.equal(frozen(x, w2), plain(x, w2))


def test_another_thread_count_packs_again():
    m, x = convnet()
    frozen, plain = frozen_and_plain(m)
    with torch.no_grad():
        expected = plain(x)
        assert torch.equal(frozen(x), expected)
        torch.set_num_threads(1)
        one = frozen(x)
        assert torch.equal(one, plain(x))


def test_option_must_be_a_bool():
    with pytest.raises(Exception, match="freeze_parameters"):
        torch.compile(torch.nn.Linear(2, 2), backend="stax",
                      options={"freeze_parameters": 1})(torch.randn(1, 2))


def test_check_per_call_is_cheap():
    """What the check costs per packed weight on the path of every call: a few attribute reads
    (identity, version, pointer, dtype). Generous bound; docs/freeze_parameters.md gives the
    measured figure."""
    m, x = convnet()
    frozen = torch.compile(m, backend="stax", options={"freeze_parameters": True})
    with torch.no_grad():
        frozen(x)
    from stax.frozen_weights import _all_programs
    programs = [p for p in list(_all_programs)
                if any(r.packed_bytes and r.ref() is m[0].weight for r in p.records)]
    assert len(programs) == 1
    program = programs[0]
    assert len(program.records) == 3
    args = [None] * (max(r.position for r in program.records) + 1)
    for r in program.records:
        args[r.position] = r.ref()
    threads = program.records[0].threads
    calls = 20000
    start = time.perf_counter()
    for _ in range(calls):
        program.check(args, threads)
    per_weight = (time.perf_counter() - start) / calls / len(program.records)
    assert per_weight < 5e-6, f"{per_weight * 1e9:.0f} ns per weight"
