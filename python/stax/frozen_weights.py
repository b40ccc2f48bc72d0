"""freeze_parameters=True (docs/freeze_parameters.md): convolution weights packed once.

oneDNN's convolutions read their weights in a blocked format of their own (on AMX, VNNI
blocks), and without a promise that the weights did not change a call reorders them every
time, as eager does; on ResNet-18's deepest layers that costs as much as the convolution. With
the option, each convolution call of a compiled program whose weights are a graph input that
is an nn.Parameter or a module's registered buffer gets them packed once (the program's slot
for the site, _C.Compiled.pack_weights), and every call first checks, per packed weight, that
the tensor passed is the one packed, with the same version counter (`_version`, which every
in-place op on it or its views bumps), data pointer, dtype and thread count (sizes and strides
are the compiled layout's, which the region checks before). On any difference the weight is
packed again before the call, so a copy older than a change that bumps the version is never
read. What the check cannot see (a write through `p.data`, NumPy, DLPack or another process)
is the user's to signal with stax.unfreeze(); the docs say so.

Weights that require grad in a training graph (AOTAutograd's forward, or an inference graph
called with grad enabled) are not packed: an optimizer step changes them every call.
"""

from __future__ import annotations

import re
import threading
import weakref

import torch

# Every program's records, for stax.unfreeze().
_all_programs: "weakref.WeakSet[FrozenWeights]" = weakref.WeakSet()


def _no_tensor():
    return None


class ModuleState:
    """The graph inputs Dynamo took from modules' registered buffers, by identity (parameters
    are recognized by their class): whose contents the user changes only through ops that
    bump their version counter, or says so (stax.unfreeze). Also the names Dynamo knows the
    parameters and buffers by, for explain."""

    def __init__(self, gm, example_inputs):
        self._buffers: dict[int, weakref.ref] = {}
        self._names: dict[int, tuple] = {}  # id -> (weakref, "self.layer1.0.conv1.weight")
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for node, value in zip(placeholders, example_inputs):
            if not isinstance(value, torch.Tensor):
                continue
            grapharg = node.meta.get("grapharg")
            source = getattr(grapharg, "source", None)
            name = getattr(source, "name", "")
            name = str(name() if callable(name) else name)
            if "._buffers[" in name:
                self._buffers[id(value)] = weakref.ref(value)
            if name:
                self._names[id(value)] = (weakref.ref(value), _readable(name))

    def holds(self, tensor) -> bool:
        if isinstance(tensor, torch.nn.Parameter):
            return True
        ref = self._buffers.get(id(tensor))
        return ref is not None and ref() is tensor

    def name(self, tensor) -> str | None:
        entry = self._names.get(id(tensor))
        return entry[1] if entry is not None and entry[0]() is tensor else None


_SOURCE_PARTS = re.compile(r"\._(?:modules|parameters|buffers)\['([^']*)'\]")


def _readable(source: str) -> str:
    """Dynamo's source of a module attribute as the user writes it:
    L['self']._modules['layer1']._modules['0']._parameters['weight'] -> self.layer1.0.weight."""
    text = _SOURCE_PARTS.sub(r".\1", source)
    return re.sub(r"^L\['([^']*)'\]", r"\1", text)


class Freezing:
    """What a graph's regions need to freeze weights: the module state of the Dynamo graph
    and whether the graph trains (AOTAutograd's forward of a joint graph)."""

    def __init__(self, module_state: ModuleState, training: bool):
        self.module_state = module_state
        self.training = training


class _Record:
    """One convolution site's packed weight: the tensor it was packed from and what the
    per-call check compares."""

    __slots__ = ("site", "source", "position", "input_name", "ref", "ptr", "version", "dtype",
                 "threads", "storage", "packed_bytes", "why_not", "weight_name")

    def __init__(self, site, source, position, input_name):
        self.site = site
        self.source = source
        self.position = position
        self.input_name = input_name
        self.ref = _no_tensor  # nothing packed yet: the first call packs
        self.ptr = self.version = self.dtype = self.threads = None
        self.storage = None
        self.packed_bytes = 0
        self.why_not = "not called yet (packed on the first call)"
        self.weight_name = input_name  # the module attribute, once a call showed it


class FrozenWeights:
    """The packed weights of one compiled program (a region's variant) and their check."""

    def __init__(self, compiled, freezing: Freezing):
        self.compiled = compiled
        self.freezing = freezing
        self.records = []
        self.refused = []  # (site, source, why_not) of sites the program cannot freeze
        for site, source, position, input_name, why_not in compiled.weight_sites:
            if why_not:
                self.refused.append((site, source, why_not))
            else:
                self.records.append(_Record(site, source, position, input_name))
        self.active = list(self.records)  # the records the per-call check visits
        self._lock = threading.Lock()
        _all_programs.add(self)

    @staticmethod
    def for_program(compiled, freezing):
        """The program's FrozenWeights, or None when it has no convolution reading weights."""
        return FrozenWeights(compiled, freezing) if compiled.weight_sites else None

    def check(self, args, threads: int) -> None:
        """Before each call: packs again every weight that is not the one packed, unchanged."""
        for r in self.active:
            a = args[r.position]
            if (r.ref() is not a or a._version != r.version or a.data_ptr() != r.ptr
                    or a.dtype is not r.dtype or r.threads != threads):
                self._refresh(r, a, threads)

    def _refresh(self, r: _Record, a, threads: int) -> None:
        with self._lock:
            if not self.freezing.module_state.holds(a):
                # An activation or a plain argument: a new tensor on every call, whose memory
                # may be reused by the next one. Never packed, and never checked again (a graph
                # input is a parameter on every call or on none).
                self._unpack(r)
                r.why_not = "not an nn.Parameter or registered buffer"
                self.active = [x for x in self.active if x is not r]
                return
            if a.requires_grad and (self.freezing.training or torch.is_grad_enabled()):
                self._unpack(r)
                r.why_not = "requires grad in training (an optimizer changes it every step)"
            else:
                r.packed_bytes = self.compiled.pack_weights(r.site, a.data_ptr(), threads)
                r.why_not = "" if r.packed_bytes else \
                    "the kernel reads the weights in place (nothing to pack)"
            # A packed record keeps the storage alive, so that while it exists no other tensor
            # can be allocated at the address it compares (`p.data = other` swaps p's storage
            # without bumping its version).
            r.storage = a.untyped_storage() if r.packed_bytes else None
            r.weight_name = self.freezing.module_state.name(a) or r.input_name
            r.ref = weakref.ref(a)
            r.ptr = a.data_ptr()
            r.version = a._version
            r.dtype = a.dtype
            r.threads = threads

    def _unpack(self, r: _Record) -> None:
        self.compiled.unpack_weights(r.site)
        r.packed_bytes = 0
        r.storage = None
        r.ref = _no_tensor

    def unfreeze(self, tensors=None) -> int:
        """Drops the packed weights (of `tensors` only, when given: an iterable of tensors);
        the next call packs them again from their current contents. Returns how many."""
        ids = None if tensors is None else {id(t) for t in tensors}
        dropped = 0
        with self._lock:
            for r in self.records:
                if r.packed_bytes and (ids is None or id(r.ref()) in ids):
                    self._unpack(r)
                    r.why_not = "unfrozen (packed again on the next call)"
                    dropped += 1
        return dropped

    def report(self, region_name: str) -> list:
        """Lines for stax.explain: per convolution site, its library call when its weights are
        packed, else why they are not."""
        lines = []
        for r in self.records:
            what = f"{region_name} site {r.site} ({r.source}), weights {r.weight_name}"
            if r.packed_bytes:
                lines.append(f"  frozen: {what}: {self.compiled.library_call(r.site)}")
            else:
                lines.append(f"  not frozen: {what}: {r.why_not}")
        for site, source, why_not in self.refused:
            lines.append(f"  not frozen: {region_name} site {site} ({source}): {why_not}")
        return lines


def unfreeze(module=None) -> int:
    """stax.unfreeze: drops packed weights so that the next call packs them again."""
    tensors = None
    if module is not None:
        if isinstance(module, torch.nn.Module):
            tensors = list(module.parameters()) + list(module.buffers())
        elif isinstance(module, torch.Tensor):
            tensors = [module]
        else:
            raise TypeError("stax.unfreeze takes an nn.Module, a tensor or nothing (every "
                            f"compiled graph), got {type(module).__name__}")
    return sum(program.unfreeze(tensors) for program in list(_all_programs))
