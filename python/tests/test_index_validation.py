"""Index validation of every op that reads through an index tensor, through torch.compile vs
eager PyTorch: which ops wrap a negative index (index.Tensor, and take_along_dim through the
remainder it decomposes into) and which raise (index_select, gather, embedding), for which
values, with eager's exception class (IndexError or RuntimeError) and message, static and with
dynamic=True.

All the ops sit in one compiled function, each with its own index input, so the whole sweep
costs one compilation per mode: a call makes one op's index bad (the others stay valid) and
must then raise what eager raises for that op, naming the op and the offending value.
"""

import pytest
import torch

from eager_comparison import check_explain

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def indexing_ops(t, v, t3, w, i_rows, i_cols, i_vec, i_dim2, g_rows, g_cols, e, x_rows, x_cols, j,
                 a):
    return (
        torch.index_select(t, 0, i_rows),  # IndexError "index out of range in self"
        torch.index_select(t, 1, i_cols),  # RuntimeError "INDICES element is out of DATA bounds"
        torch.index_select(v, 0, i_vec),  # 1-D source: IndexError
        torch.index_select(t3, 2, i_dim2),  # IndexError
        torch.gather(t, 0, g_rows),  # RuntimeError "index V is out of bounds for dimension 0"
        torch.gather(t, 1, g_cols),
        torch.nn.functional.embedding(e, w),  # IndexError "index out of range in self"
        t[x_rows],  # index.Tensor: wraps once, IndexError beyond
        t[:, x_cols],  # PyTorch numbers the dim among the tensor indices: "dimension 0"
        t[j],  # an int32 index
        torch.take_along_dim(t, a, 1),  # remainder, then gather: never raises
    )


# Per index input: its name, the size of the dim it indexes, its shape, and the op's name as
# Stax's message gives it (None: the op never raises).
INDEX_INPUTS = [
    ("i_rows", 3, (2,), "index_select"),
    ("i_cols", 4, (2,), "index_select"),
    ("i_vec", 5, (2,), "index_select"),
    ("i_dim2", 2, (2,), "index_select"),
    ("g_rows", 3, (1, 4), "gather"),
    ("g_cols", 4, (3, 1), "gather"),
    ("e", 5, (2, 2), "embedding"),
    ("x_rows", 3, (2,), "index"),
    ("x_cols", 4, (2,), "index"),
    ("j", 3, (2,), "index"),
    ("a", 4, (3, 1), None),
]


def valid_inputs():
    inputs = {
        "t": torch.arange(12.0).reshape(3, 4),
        "v": torch.arange(5.0) * 10,
        "t3": torch.arange(24.0).reshape(3, 4, 2),
        "w": torch.arange(15.0).reshape(5, 3),
    }
    for name, size, shape, _ in INDEX_INPUTS:
        dtype = torch.int32 if name == "j" else torch.int64
        inputs[name] = (torch.arange(torch.Size(shape).numel()) % size).reshape(shape).to(dtype)
    return inputs


def bad_values(name, size):
    values = [-size - 1, -size, -1, size, INT64_MIN, INT64_MAX]
    if name == "j":  # the int32 index takes its dtype's extremes
        values = [-size - 1, -size, -1, size, -(2**31), 2**31 - 1]
    return values


def call(fn, inputs):
    try:
        return fn(**inputs), None
    except Exception as error:  # the op's error, compared with eager's
        return None, error


def check_like_eager(compiled, inputs, op, value):
    expected, expected_error = call(indexing_ops, inputs)
    got, error = call(compiled, inputs)
    if expected_error is None:
        assert error is None, f"{op} at {value}: eager accepts it, compiled raised {error!r}"
        for k, (a, b) in enumerate(zip(got, expected)):
            torch.testing.assert_close(a, b, rtol=0, atol=0, msg=f"{op} at {value}: output {k}")
        return
    eager_message = str(expected_error).splitlines()[0]
    assert error is not None, f"{op} at {value}: eager raises {expected_error!r}, compiled did not"
    assert type(error) is type(expected_error), (
        f"{op} at {value}: eager raises {type(expected_error).__name__} ({eager_message}), "
        f"compiled {type(error).__name__} ({error})")
    assert eager_message in str(error), f"{op} at {value}: {error} lacks '{eager_message}'"
    # Stax's message also names the op and the offending value.
    assert f"{op}: " in str(error) and str(value) in str(error), str(error)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_indexing_ops_validate_indices_as_eager(backend, is_stax, dynamic):
    compiled = torch.compile(indexing_ops, backend=backend, dynamic=dynamic)
    inputs = valid_inputs()
    check_like_eager(compiled, inputs, "all valid", 0)
    for name, size, _, op in INDEX_INPUTS:
        for value in bad_values(name, size):
            case = dict(inputs)
            bad = inputs[name].clone()
            bad.view(-1)[-1] = value  # the last element: past the first vector on every level
            case[name] = bad
            if not is_stax:  # other backends read out of bounds: compare only what eager accepts
                if call(indexing_ops, case)[1] is not None:
                    continue
            check_like_eager(compiled, case, op or "take_along_dim", value)


def test_every_indexing_op_runs_in_stax(is_stax):
    # Otherwise the sweep above would compare eager with eager (stax.explain is Stax's).
    if is_stax:
        check_explain("index validation", lambda *args: indexing_ops(*args),
                      *valid_inputs().values(),
                      must_run_in_stax=("index_select", "gather", "embedding", "index"))


def test_take_along_dim_of_int64_extremes_wraps_as_eager(backend):
    # take_along_dim reduces the index modulo the size (remainder), so even INT64_MIN and
    # INT64_MAX select an element.
    t = torch.arange(12.0).reshape(3, 4)
    a = torch.tensor([[INT64_MIN], [INT64_MAX], [-5]])
    fn = torch.compile(lambda t, a: torch.take_along_dim(t, a, 1), backend=backend)
    torch.testing.assert_close(fn(t, a), torch.take_along_dim(t, a, 1), rtol=0, atol=0)


def empty_result_ops(s30, s302, s023, w, i_rows, i_dim0, i_dim2, e, x):
    # Every result is empty through a dim other than the indexed one: no element reads through
    # the index, yet eager checks every value of index_select and embedding (RuntimeError
    # "INDICES element is out of DATA bounds, id=V axis_dim=3", for any dim) and none of
    # index.Tensor (s30[tensor([5])] is a (1, 0) tensor).
    return (
        torch.index_select(s30, 0, i_rows),
        torch.index_select(s302, 0, i_dim0),
        torch.index_select(s023, 2, i_dim2),
        torch.nn.functional.embedding(e, w) * 2,
        s30[x],
    )


EMPTY_RESULT_INDICES = [("i_rows", (2,), "index_select"), ("i_dim0", (1,), "index_select"),
                        ("i_dim2", (2,), "index_select"), ("e", (2, 2), "embedding")]


def empty_result_inputs():
    inputs = {"s30": torch.zeros(3, 0), "s302": torch.zeros(3, 0, 2), "s023": torch.zeros(0, 2, 3),
              "w": torch.zeros(3, 0, dtype=torch.bfloat16)}
    for name, shape, _ in EMPTY_RESULT_INDICES:
        inputs[name] = (torch.arange(torch.Size(shape).numel()) % 3).reshape(shape)
    inputs["x"] = torch.tensor([5])  # in empty_result_ops' order: check_explain passes them so
    return inputs


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_empty_results_still_validate_indices_as_eager(backend, is_stax, dynamic):
    compiled = torch.compile(empty_result_ops, backend=backend, dynamic=dynamic)
    inputs = empty_result_inputs()
    expected, error = call(empty_result_ops, inputs)
    got, compiled_error = call(compiled, inputs)
    assert error is None and compiled_error is None, (error, compiled_error)
    for a, b in zip(got, expected):
        assert a.shape == b.shape and a.dtype == b.dtype
    for name, _, op in EMPTY_RESULT_INDICES:
        for value in [-4, -1, 3, INT64_MIN, INT64_MAX]:
            case = dict(inputs)
            case[name] = inputs[name].clone()
            case[name].view(-1)[-1] = value
            expected_error = call(empty_result_ops, case)[1]
            assert isinstance(expected_error, RuntimeError), expected_error
            if not is_stax:  # other backends need not check what they do not read
                continue
            error = call(compiled, case)[1]
            eager_message = str(expected_error).splitlines()[0]
            assert type(error) is type(expected_error), f"{op} at {value}: {error!r}"
            assert eager_message in str(error), f"{op} at {value}: {error} lacks {eager_message}"
            assert f"{op}: " in str(error), str(error)


def test_empty_results_run_in_stax(is_stax):
    # Without it the test above could pass through a region that fell back to PyTorch.
    if is_stax:
        check_explain("empty index results", lambda *args: empty_result_ops(*args),
                      *empty_result_inputs().values(),
                      must_run_in_stax=("index_select", "embedding", "index"))
