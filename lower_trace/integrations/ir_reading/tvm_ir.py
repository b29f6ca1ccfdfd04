"""The IRAdapter capture needs (capture/ports.py), on TVM: printing, identity and rebuilding of IR
modules, names and signatures, codegen descriptions. Every integration shares it and gives it a
phase provider (pass_origin.py). Running a compile traced is adapters/tvm_driver.py; the snapshot printers
are snapshot_printers.py; TileLang's source hooks are adapters/source_hooks.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tvm
import tvm_ffi

from lower_trace.capture.ir_adapter import CodegenInfo, CompileContext, Identity, Module, SnapshotPrinter
from lower_trace.integrations.adapters.tvm_driver import SKIP_DIRS
from lower_trace.integrations.ir_reading import tir_spans
from lower_trace.integrations.ir_reading.pass_origin import PassOrigins, PhaseRules
from lower_trace.integrations.ir_reading.snapshot_printers import PlainPrinter, SpanSnapshotPrinter
from lower_trace.integrations.ir_reading.stack_walk import CallSite
from lower_trace.integrations.ir_reading.tvm_print import ReusingPrinter, function_items, same_object, same_parts, structural_equal
from lower_trace.integrations.reruns import replay
from lower_trace.model import FragmentLayout, PassBuild, PassCall

_LANGUAGE_OF_CODEGEN = (
    ("cutedsl", "python"),
    ("cuda", "cuda"),
    ("hip", "hip"),
    ("metal", "metal"),
    ("webgpu", "wgsl"),
    ("ascend", "ascendc"),
    ("llvm", "llvm"),
    ("tilelang_cpp", "c"),
    ("tilelang_c", "c"),
    ("build.c", "c"),
)
# The FFI constructor takes attrs as the DictAttrs object itself (IRModule() would re-wrap them).
_make_module = tvm.ir.module._ffi_api.IRModule
_make_source_module = tvm_ffi.get_global_func("runtime.CSourceModuleCreate", allow_missing=True)
_IntImm = (getattr(tvm, "tirx", None) or tvm.tir).IntImm


def _extent_text(extent: Any) -> str:
    """A buffer extent as TVMScript prints it: an int32 constant without a print (six prints a GEMM)."""
    if type(extent) is _IntImm and extent.dtype == "int32":
        return str(extent.value)
    return repr(extent)


class TVMIR(PassOrigins):
    """The IRAdapter that capture uses: printing, identity, names, context (and, from
    PassOrigins, where passes and compiles were called from)."""

    def __init__(
        self,
        phase_provider: Callable[[], str | None] = lambda: None,
        phase_rules: PhaseRules = (),
        skip_dirs: Sequence[str] = SKIP_DIRS,
        phase_of_sites: Callable[[list[CallSite]], str] | None = None,
        layouts: bool = False,
        library_dirs: Sequence[str] = (),
        spans: str = "",
    ) -> None:
        # "" when statements carry the user's source spans; else why lines cannot be traced to it.
        self._spans_problem = spans if spans else ("" if tir_spans.available() else "this compiler keeps no source spans on its IR")
        super().__init__(phase_provider, phase_rules, skip_dirs, phase_of_sites, library_dirs)
        self.layouts = layouts  # TileLang: fragment layouts are read for the report's pictures

    def print_ir(self, mod: Module) -> str:
        return mod.script()

    def snapshot_printer(self) -> SnapshotPrinter:
        """Prints a compile's snapshots, reusing the text of functions that did not change (tvm_print.py),
        with their statements' source spans where the compiler keeps them (tir_spans.py)."""
        if self._spans_problem:
            return PlainPrinter(ReusingPrinter(self.print_ir))
        return SpanSnapshotPrinter(self.rebuild, tir_spans.SpanPrinter(self.print_ir, (*self.library_dirs, *self.skip_dirs)))

    def spans_problem(self) -> str:
        if self._spans_problem or not tir_spans.marking_disabled():
            return self._spans_problem
        return "a print with source-span markers differed from a plain print in this process, so spans were switched off (please report it with the kernel)"

    def codegen_line_map(self, function: str, mod: Module, target: Any, configs: dict[str, Any], source: str, tir_text: str) -> str:
        if self._spans_problem:
            return ""
        return tir_spans.codegen_line_map(function, mod, target, configs, source, tir_text)

    def codegen_configs(self) -> dict[str, Any]:
        if self._spans_problem:
            return {}
        return dict(tvm.transform.PassContext.current().config)

    def identity(self, mod: Module) -> Identity:
        """The module's parts, held by reference: passes may update an IRModule in place
        (SplitHostDevice does), but never its function map, attrs or global infos while
        we hold a reference to them (TVM copies on write when shared). Three attribute
        reads per callback, no iteration."""
        return (mod.attrs, mod.global_infos, mod.functions)

    def rebuild(self, identity: Identity) -> Module:
        """A module with exactly the captured content (prints the same as the original did)."""
        attrs, infos, functions = identity
        return _make_module(functions, attrs, infos)

    def same(self, a: Identity, b: Identity) -> bool:
        return same_object(a[2], b[2]) and same_object(a[0], b[0]) and same_object(a[1], b[1])

    def equivalent(self, a: Identity, b: Identity) -> bool:
        """Structural equality: about ten times cheaper than printing both modules. Passes
        often return a new function map holding the very same functions: those are
        compared by pointer, only the others structurally."""
        try:
            return _equal_part(a[0], b[0]) and _equal_part(a[1], b[1]) and _equal_functions(a[2], b[2])
        except Exception:
            return False

    def read_layouts(self, before_text: str, after_text: str, identity: Identity) -> tuple[FragmentLayout, ...]:
        """The fragment layouts of the IR a pass made, when its text shows other layout annotations
        than its input's (only then: a few passes per kernel); () otherwise."""
        if not self.layouts:
            return ()
        from lower_trace.integrations.ir_reading import tilelang_layouts

        if not tilelang_layouts.changes_layouts(before_text, after_text):
            return ()
        return tilelang_layouts.fragment_layouts(self.rebuild(identity))

    def module_json(self, identity: Identity) -> str:
        return replay.module_json(self.rebuild(identity))

    def json_problem(self) -> str:
        return replay.json_problem()

    def replay_context(self) -> dict[str, Any]:
        return replay.current_context()

    def pass_build(self, name: str, call: PassCall | None, nested_in: str = "") -> PassBuild | str:
        return replay.pass_build(name, call, nested_in)

    def kernel_name(self, mod: Module) -> str:
        try:
            names = sorted(gv.name_hint for gv in mod.get_global_vars())
        except Exception:
            return "kernel"
        return "+".join(names) if names else "kernel"

    def compile_context(self) -> CompileContext:
        text = ""
        target = tvm.target.Target.current(allow_none=True)
        if target is not None:
            text = str(target.kind.name) + (f" -arch={target.attrs['arch']}" if "arch" in target.attrs else "")
        try:
            config = tvm.transform.PassContext.current().config
            configs = {str(key): str(value) for key, value in config.items()}
        except Exception:
            configs = {}
        return CompileContext(text, configs)

    def module_source(self, runtime_mod: Any) -> str:
        for getter in ("inspect_source", "get_source"):
            method = getattr(runtime_mod, getter, None)
            if method is None:
                continue
            try:
                text = method()
            except Exception:
                continue
            if text:
                return str(text)
        return ""

    def kernel_signature(self, mod: Module) -> str:
        """Names, shapes and dtypes of the kernel's buffers: which of same-named kernels this is."""
        parts = []
        for gv, func in sorted(mod.functions.items(), key=lambda item: item[0].name_hint):
            buffers = getattr(func, "buffer_map", None) or {}
            params = [f"{b.name}:[{', '.join(map(_extent_text, b.shape))}]:{b.dtype}" for b in buffers.values()]
            parts.append(f"{gv.name_hint}({', '.join(params)})")
        return "; ".join(parts)

    def source_module(self, text: str, language: str) -> Any:
        """A source-only runtime module holding text, for backends that compile kernel_source."""
        if _make_source_module is None:
            raise RuntimeError("this TVM cannot make a C source module")
        return _make_source_module(text, language, [], [])

    def codegen_info(self, function: str, target: Any) -> CodegenInfo:
        role = "host" if function.endswith("_host") or function == "target.build.llvm" else "device"
        language = next((lang for key, lang in _LANGUAGE_OF_CODEGEN if key in function), "")
        try:
            kind = str(target.kind.name)
            arch = target.attrs.get("arch", "")
            text = kind + (f" -arch={arch}" if arch else "")
        except Exception:
            text = str(target)
        return CodegenInfo(role, language or text.split()[0], text)


def _equal_part(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return same_object(a, b) or structural_equal(a, b)


def _equal_functions(a: Any, b: Any) -> bool:
    if same_object(a, b):
        return True
    ours, theirs = function_items(a), function_items(b)
    if len(ours) != len(theirs):
        return False
    # Passes keep the GlobalVars (and the map keeps their order): pair the functions by position,
    # by name only when the keys differ.
    if not all(gv.same_as(other) for (gv, _), (other, _) in zip(ours, theirs, strict=True)):
        by_name = {gv.name_hint: func for gv, func in theirs}
        if len(by_name) != len(theirs) or any(gv.name_hint not in by_name for gv, _ in ours):
            return False
        theirs = [(gv, by_name[gv.name_hint]) for gv, _ in ours]
    return all(
        func.same_as(other) or same_parts(func, other) or structural_equal(func, other) for (_, func), (_, other) in zip(ours, theirs, strict=True)
    )
