"""The "stax" torch.compile backend.

Dynamo hands over an FX graph of the user's program; AOTAutograd (with core ATen
decompositions plus the decompositions of the normalizations and softmaxes into ops Stax
has) turns it into forward, backward or inference graphs of ATen ops; each of those is
partitioned (partition.py) into Stax regions, compiled by the C++ pipeline, and nodes Stax
does not have, which PyTorch runs. The order of the steps for one ATen graph is
`compile_aten_graph`.

Graphs with symbolic sizes (Dynamo's automatic dynamic shapes after a shape change, or
dynamic=True / mark_dynamic) are traced once; each region compiles to one program for every
size where Stax takes its symbols, else per size (symbolic_region.py).
"""

from __future__ import annotations

import concurrent.futures
import functools
import operator
import os
import re
import threading

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._decomp import core_aten_decompositions, get_decompositions

from . import (aten_ops, compile_log, debug, dynamo_rewrites, half_decompositions, random_ops,
               requirements)
from .aten_ops import Unsupported
from .frozen_weights import Freezing, ModuleState
from .options import Options
from .partition import PartitionReport, node_problem, op_name, partition, translate_region
from .reinplace import reinplace_scatters
from .size_hoisting import hoist_size_reads
from .region import Region
from .symbolic_region import SymbolicRegion

aten = torch.ops.aten

# Decompositions beyond the core ATen set, into ops Stax implements.
_EXTRA_DECOMPOSITIONS = [
    aten.native_layer_norm,
    aten._softmax,
    aten._log_softmax,
    aten._native_batch_norm_legit_functional,
    aten._native_batch_norm_legit_no_training,
    aten._native_batch_norm_legit,
    aten.native_group_norm,
    aten.squeeze.dims,
    aten.native_dropout,
]


def _std_mean(x, dim=None, *, correction=None, keepdim=False):
    """std_mean as PyTorch's CPU kernel computes it: var_mean's Welford pass and the square
    root both in double, each result rounded once. (Core ATen's sqrt of var_mean rounds the
    variance first, so float32 values of magnitude 1e30 would give an infinite std.)"""
    if not x.dtype.is_floating_point:
        return _CORE_STD_MEAN(x, dim, correction=correction, keepdim=keepdim)
    var, mean = aten.var_mean.correction(
        aten._to_copy.default(x, dtype=torch.float64), dim, correction=correction,
        keepdim=keepdim)
    return (aten._to_copy.default(aten.sqrt.default(var), dtype=x.dtype),
            aten._to_copy.default(mean, dtype=x.dtype))


_CORE_STD_MEAN = core_aten_decompositions()[aten.std_mean.correction]


def _native_layer_norm(input, normalized_shape, weight, bias, eps):
    """layer_norm with its statistics computed as eager's CPU kernel computes them: in the
    computation dtype (float32 for float32 and the 16-bit dtypes, whose values it widens),
    the mean and then the mean of the squared deviations, as two sums over the row. Core
    ATen's decomposition takes var_mean, whose eager kernel (and so Stax's var_mean)
    accumulates float32 in double with a division per element (Welford's update): the same
    statistics to float32's precision at several times the cost. Empty rows and mismatched
    shapes are left to core ATen's decomposition (its checks and its NaN statistics)."""
    axis = input.dim() - len(normalized_shape)
    if (len(normalized_shape) == 0 or axis < 0
            or tuple(input.shape[axis:]) != tuple(normalized_shape)
            or input.shape[axis:].numel() == 0 or input.is_complex()
            or not input.dtype.is_floating_point):
        return _CORE_LAYER_NORM(input, normalized_shape, weight, bias, eps)
    dims = list(range(axis, input.dim()))
    x = input
    if input.dtype in (torch.float16, torch.bfloat16):
        x = aten._to_copy.default(input, dtype=torch.float32)
    mean = aten.mean.dim(x, dims, True)
    centered = aten.sub.Tensor(x, mean)
    var = aten.mean.dim(aten.mul.Tensor(centered, centered), dims, True)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))
    out = aten.mul.Tensor(centered, rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    if out.dtype != input.dtype:
        out = aten._to_copy.default(out, dtype=input.dtype)
        mean = aten._to_copy.default(mean, dtype=input.dtype)
        rstd = aten._to_copy.default(rstd, dtype=input.dtype)
    return out, mean, rstd


_CORE_LAYER_NORM = get_decompositions([aten.native_layer_norm])[aten.native_layer_norm.default]

# Decompositions of Stax's own, replacing core ATen's; rand and rand_like computed in Stax's
# kernels (random_ops.py).
_OWN_DECOMPOSITIONS = {
    aten.std_mean.correction: _std_mean,
    aten.native_layer_norm.default: _native_layer_norm,
    **random_ops.DECOMPOSITIONS,
}


# Core ATen decomposes these, but eager runs them whole: the fused CPU attention runs in
# Stax's runtime attention (float32 and bfloat16), else in PyTorch's kernel; decomposing it
# would change the numbers (up to 1e-3 in the gradients of a TransformerEncoderLayer) and
# materialize every score.
_KEPT_WHOLE = [aten._scaled_dot_product_flash_attention_for_cpu.default]


@functools.lru_cache(maxsize=1)
def decompositions():
    """Core ATen decompositions, except of ops Stax implements itself: Stax computes those
    exactly as eager does, which a decomposition need not (remainder by an infinity through
    floor division gives NaN; sub with alpha in bfloat16 rounds the product first)."""
    stax_ops = aten_ops.stax_op_params()
    table = {
        op: fn for op, fn in core_aten_decompositions().items()
        if not (isinstance(op, torch._ops.OpOverload)
                and op.namespace == "aten" and op._overloadpacket.__name__ in stax_ops)
    }
    table.update(get_decompositions(_EXTRA_DECOMPOSITIONS))
    table.update(_OWN_DECOMPOSITIONS)
    for op in _KEPT_WHOLE:
        table.pop(op, None)
    # 16-bit values rounded where eager's kernel rounds them (half_decompositions.py).
    return half_decompositions.round_as_eager(table)


# stax.explain records what each compiled graph did while it is active.
_recorders: list[list] = []
_recorder_lock = threading.Lock()


class GraphRecord:
    """What compiling one ATen graph gave: its regions and the report of ops."""

    def __init__(self, kind: str, name: str, report: PartitionReport, regions: list[Region]):
        self.kind = kind
        self.name = name
        self.report = report
        self.regions = regions

    def __repr__(self) -> str:
        return (f"GraphRecord({self.kind} {self.name}: {len(self.regions)} Stax regions, "
                f"{sum(self.report.stax_ops.values())} ops in Stax, "
                f"{sum(self.report.fallback_ops.values())} in PyTorch)")


_graph_counter = 0
_counter_lock = threading.Lock()


def _next_graph_name(kind: str) -> str:
    global _graph_counter
    with _counter_lock:
        _graph_counter += 1
        return f"{kind}_{_graph_counter}"


def _is_counted(node: torch.fx.Node) -> bool:
    """Nodes counted in the Stax/PyTorch report: ATen ops that compute (not getitem)."""
    return node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)


def compile_aten_graph(gm: torch.fx.GraphModule, example_inputs, options: Options, kind: str,
                       module_state: ModuleState | None = None):
    """The steps for one AOTAutograd graph; returns a boxed callable. `module_state`: the
    Dynamo graph's parameters and buffers, for freeze_parameters."""
    name = _next_graph_name(kind)
    with compile_log.GraphCompile(options, name) as timer:
        return _compile_aten_graph(gm, options, kind, module_state, name, timer)


def _compiled_programs(region) -> list:
    """The programs a region compiled when the graph was compiled (compile_log)."""
    primary = getattr(region, "primary", None)
    if primary is not None:
        return [primary.compiled]
    program = getattr(region, "program", None)
    return [program.compiled] if program is not None else []


def _compile_aten_graph(gm, options, kind, module_state, name, timer):
    stax_ops = aten_ops.stax_op_params()
    report = PartitionReport()
    debug.write_fx_graph(options, name, gm)

    # 1. Partition into Stax regions and PyTorch nodes, the scatters PyTorch runs made
    # in-place where nothing else reads their destination (reinplace.py), the sizes read off
    # computed tensors read off the inputs instead (size_hoisting.py).
    hoist_size_reads(gm)
    reinplace_scatters(gm, lambda node: node_problem(node, stax_ops) is not None)
    fused, region_names, reasons = partition(gm, stax_ops)

    # A region writes inputs in place (copy_) when it runs: a PyTorch node after it must not
    # read their old contents.
    for rname in list(region_names):
        hazard = _late_reader_of_written_input(fused, rname)
        if hazard is not None:
            _inline_region(fused, rname, hazard, report, reasons)
            region_names.remove(rname)

    # 2. Translate each region to a Stax graph.
    regions: dict[str, Region] = {}
    freezing = None
    if options.freeze_parameters and module_state is not None:
        # AOTAutograd's forward graph trains: weights that require grad change every step.
        freezing = Freezing(module_state, training=kind == "forward")
    for rname in region_names:
        sub = getattr(fused, rname)
        try:
            text_graph = translate_region(sub, f"{name}_{rname}", stax_ops)
            if text_graph.symbols.facts or text_graph.unspellable or text_graph.number_inputs:
                # Sizes known only at run time (issue 33): translated once, run at any size;
                # numbers computed from sizes are inputs made at each call.
                regions[rname] = SymbolicRegion(text_graph, options, freezing, reference=sub)
            else:
                regions[rname] = Region(text_graph, options, freezing)
            regions[rname].reference = sub  # the region as PyTorch runs it (debugging)
        except Unsupported as e:
            _inline_region(fused, rname, f"translation failed: {e}", report, reasons)

    # 3. Compile the regions concurrently (the C++ compiler runs without the GIL). A region
    # Stax refuses (a shape or argument its type inference rejects) runs in PyTorch.
    def build(item):
        rname, region = item
        try:
            return rname, region.compile(), None
        except (ValueError, RuntimeError) as e:
            return rname, None, e

    items = list(regions.items())
    if len(items) > 1:
        workers = min(len(items), max(1, os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(build, items))
    else:
        results = [build(i) for i in items]
    for rname, region, error in results:
        if region is not None:
            continue
        missing = requirements.environment_problem(error)
        if missing is not None:
            # Not the graph's fault: every region would fall back, silently slow.
            raise requirements.MissingRequirement(f"stax: {missing}") from error
        debug.log(options, "fallback", f"stax: region {rname} of {name} runs in PyTorch: {error}")
        del regions[rname]
        _inline_region(fused, rname, f"Stax refused the region: {_first_line(error)}",
                       report, reasons)
    for region in regions.values():
        for compiled in _compiled_programs(region):
            timer.add_region(compiled)

    # 4. Install the compiled regions and count what runs where.
    for rname, region in regions.items():
        sub = getattr(fused, rname)
        for node in sub.graph.nodes:
            if _is_counted(node):
                report.stax_ops[op_name(node)] += 1
        setattr(fused, rname, _RegionModule(region))
    for node in fused.graph.nodes:
        if _is_counted(node):
            report.add_fallback(op_name(node), reasons.get(node.name, "not supported"))
    fused.recompile()

    record = GraphRecord(kind, name, report, list(regions.values()))
    debug.report_graph(options, record, fused)
    with _recorder_lock:
        for r in _recorders:
            r.append(record)
    direct = _direct_call(fused, regions)
    if direct is None:
        return _boxed_graph(fused)
    if getattr(direct, "_boxed_call", False):
        return direct  # a region's boxed call (region.py): it releases each input itself
    return _boxed(direct)


def _first_line(error) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _late_reader_of_written_input(fused, rname) -> str | None:
    """Why region `rname` cannot write its inputs in place: a node placed after its call
    reads an input that the region's copy_ overwrites (AOTAutograd's graph orders every
    reader of an input before its copy_, but the partitioner places a region's call where
    its data dependences allow). None when there is no such node."""
    sub = getattr(fused, rname)
    call = next(n for n in fused.graph.nodes if n.op == "call_module" and n.target == rname)
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    written = [call.args[placeholders.index(n.args[0])] for n in sub.graph.nodes
               if n.op == "call_function" and n.target is aten.copy_.default]
    after = False
    for node in fused.graph.nodes:
        if node is call:
            after = True
            continue
        if after and node.op in ("call_function", "call_module", "call_method"):
            for w in written:
                if w in node.all_input_nodes:
                    return (f"it writes input {w.name} in place, which {node.name} reads after it "
                            "in PyTorch")
    return None


def _inline_region(fused, rname, reason, report, reasons):
    """Puts a region's nodes back into the parent graph, to run in PyTorch."""
    sub = getattr(fused, rname)
    for node in sub.graph.nodes:
        if _is_counted(node):
            report.add_fallback(op_name(node), reason)
    call = next(n for n in fused.graph.nodes if n.op == "call_module" and n.target == rname)
    env = {}
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    for ph, arg in zip(placeholders, call.args):
        env[ph] = arg
    with fused.graph.inserting_before(call):
        for node in sub.graph.nodes:
            if node.op in ("placeholder", "output"):
                if node.op == "output":
                    result = torch.fx.map_arg(node.args[0], lambda n: env[n])
                continue
            env[node] = fused.graph.node_copy(node, lambda n: env[n])
    # The region returned a tuple (getitem users) or a single value.
    if any(u.target is operator.getitem for u in call.users) and isinstance(
        result, (list, tuple)
    ):
        for user in list(call.users):
            user.replace_all_uses_with(result[user.args[1]])
            fused.graph.erase_node(user)
    else:
        call.replace_all_uses_with(result if not isinstance(result, (list, tuple)) else result[0])
    fused.graph.erase_node(call)
    delattr(fused, rname)


class _RegionModule(torch.nn.Module):
    def __init__(self, region: Region):
        super().__init__()
        self.region = region

    def forward(self, *args):
        outs = self.region.fast_call(*args)
        return outs if len(outs) != 1 or self.region.graph_returns_tuple else outs[0]

    def boxed_forward(self, args: list):
        """forward on a list the region may empty: its boxed call drops each input at the
        program's last read of it (the inputs the graph still needs have other owners)."""
        boxed = self.region.boxed_call
        outs = boxed(args) if boxed is not None else self.region.fast_call(*args)
        args.clear()
        return outs if len(outs) != 1 or self.region.graph_returns_tuple else outs[0]


def _direct_call(fused, regions):
    """When the whole graph is one region over the graph's inputs, the region is the
    compiled function (no FX interpreter in between)."""
    nodes = list(fused.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    calls = [n for n in nodes if n.op not in ("placeholder", "output")]
    if len(calls) == 0:
        return None
    region_calls = [n for n in calls if n.op == "call_module" and n.target in regions]
    if len(region_calls) != 1:
        return None
    call = region_calls[0]
    getitems = [n for n in calls if n is not call]
    if any(g.target is not operator.getitem or g.args[0] is not call
           for g in getitems):
        return None
    if list(call.args) != placeholders:
        return None
    output = next(n for n in nodes if n.op == "output")
    outs = output.args[0]
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    positions = []
    for o in outs:
        if o is call:
            positions.append(0)
        elif o in getitems:
            positions.append(o.args[1])
        else:
            return None
    region = regions[call.target]
    if positions == list(range(len(positions))) and len(positions) == region.num_returned:
        if region.boxed_call is not None:
            return region.boxed_call  # already boxed: it gives up each input after its last use
        return region.fast_call
    def reordered(*args):
        outs = region(*args)  # once: a region may write its inputs in place
        return [outs[p] for p in positions]

    return reordered


def _boxed(fn):
    def run(args):
        # AOTAutograd's boxed convention: the list is ours to clear. A single region holds its
        # inputs until it returns (the call does); clearing the list then drops this reference
        # at once, not when AOTAutograd's caller lets the list go.
        out = fn(*args)
        args.clear()
        return out

    run._boxed_call = True
    run.unboxed = fn
    return run


# A region call as FX writes it: `x = self.stax_region_3(a, b);  a = None` (the values whose
# last use it is set to None after it).
_REGION_CALL = re.compile(r"^(\s+)(\w+) = self\.(stax_region_\d+)\(([\w, ]*)\)(?:;\s+([\w =]+) = None)?$")


def _boxed_region_call(line: str) -> str:
    """A region call that hands its arguments over in a list, the values whose last use it
    is dropped first: the region's program then frees each when it has read it for the last
    time (what other code still reads keeps an owner, so it stays)."""
    m = _REGION_CALL.match(line)
    if m is None:
        return line
    indent, out, target, args, dead = m.groups()
    args = ", ".join(a.strip() for a in args.split(",") if a.strip())
    drop = f"{dead} = None; " if dead else ""
    return (f"{indent}_args = [{args}]; {drop}"
            f"{out} = self.{target}.boxed_forward(_args); _args = None")


def _boxed_graph(fused: torch.fx.GraphModule):
    """The graph of regions and PyTorch nodes as a boxed function that releases each input
    after its last use (issue 16, point 5): it takes AOTAutograd's list of arguments, moves
    them into locals and clears the list, and FX's code drops every value, inputs included,
    after the node that reads it last, so a backward graph frees the activations saved for
    it as it goes instead of holding all of them until it returns."""
    code = fused.graph.python_code(root_module="self")
    lines = [_boxed_region_call(line) for line in code.src.split("\n")]
    start = next(k for k, line in enumerate(lines) if line.startswith("def forward("))
    names = [n.name for n in fused.graph.nodes if n.op == "placeholder"]
    body = ["def forward(self, args):"]
    if names:
        body.append(f"    {', '.join(names)}, = args")
    body.append("    args.clear()")
    src = "\n".join(lines[:start] + body + lines[start + 1:])
    scope = dict(code.globals)
    exec(compile(src, f"<stax boxed graph {type(fused).__name__}>", "exec"), scope)
    forward = scope["forward"].__get__(fused)

    def run(args):
        return forward(args)

    run._boxed_call = True
    run.unboxed = fused
    return run


def _has_symbolic(example_inputs) -> bool:
    for x in example_inputs:
        if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return True
        if isinstance(x, torch.Tensor):
            for s in list(x.shape) + list(x.stride()):
                if not isinstance(s, int):
                    return True
    return False


def _aot(gm, example_inputs, options: Options):
    compiled_inference = []
    # Which of Dynamo's graph inputs are module buffers (parameters are known by their class):
    # the tensors freeze_parameters may pack once.
    module_state = ModuleState(gm, example_inputs) if options.freeze_parameters else None

    def compiler(kind):
        def compile_graph(g, ex):
            fn = compile_aten_graph(g, ex, options, kind, module_state)
            if kind == "inference":
                compiled_inference.append((fn, len(ex), _plain_inference_graph()))
            return fn

        return compile_graph

    wrapped = aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        decompositions=decompositions(),
        # Input mutations stay in the graph as copy_(input, value) (issue 16, point 6): Stax
        # writes the value into the input's memory in place, where AOTAutograd's epilogue
        # would copy a returned value back after the call.
        keep_inference_input_mutations=options.mutations_in_place,
    )(gm, example_inputs)
    # An inference graph that mutates no input, returns no alias and takes Dynamo's inputs
    # one to one needs none of AOTAutograd's runtime wrappers (epilogues for mutations and
    # aliases, deduplication): Stax's function is called directly, which is most of the
    # per-call cost of a small graph.
    if len(compiled_inference) == 1:
        fn, arity, plain = compiled_inference[0]
        if plain and arity == len(example_inputs):
            return fn.unboxed
    return wrapped


def _plain_inference_graph() -> bool:
    return inference_graph_runtime_work() is None


def inference_graph_runtime_work() -> str | None:
    """What AOTAutograd's metadata of the graph being compiled says its runtime wrappers must
    do around it (write an input back, remake an alias, thread effect tokens, unwrap a tensor
    subclass), or None when nothing: a plain function of its inputs."""
    from torch._functorch._aot_autograd.schemas import OutputType, PlainTensorMeta

    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    if meta is None:
        return "AOTAutograd gave no metadata of the graph"
    if any(i.mutates_data or i.mutates_metadata or i.mutates_storage_metadata
           for i in meta.input_info):
        return "it writes one of its inputs"
    if any(o.output_type != OutputType.non_alias for o in meta.output_info):
        return "it returns an alias of an input or of another output"
    if meta.tokens:
        return "it calls an op with side effects (effect tokens)"
    if meta.num_intermediate_bases:
        return "it returns views of one intermediate"
    if any(not isinstance(m, (int, PlainTensorMeta)) for m in meta.subclass_inp_meta or ()):
        return "it takes a tensor subclass"
    return None


def stax_backend(gm: torch.fx.GraphModule, example_inputs, options: dict | None = None, **kwargs):
    """torch.compile(fn, backend="stax", options={...}): see options.py for the options."""
    if kwargs:
        raise ValueError(f"stax: unknown backend argument(s) {', '.join(sorted(kwargs))}")
    compile_log.backend_entered()
    opts = Options.parse(options)
    dynamo_rewrites.restore_addcdiv(gm)
    if _has_symbolic(example_inputs):
        debug.log(opts, "graph", "stax: symbolic sizes: traced once, each region compiled once "
                  "for every size where Stax takes its symbols, else per size")
    return _aot(gm, example_inputs, opts)
