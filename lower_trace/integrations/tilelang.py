"""TileLang 0.1.15+ through its public instrumentation API.

TileLang opens one instrumentation session per logical compile (``lower``,
``compile``, ``@jit``) and asks every registered tool for a PassInstrument, a
codegen wrapper and a ``finish`` call. We register one tool; no global patching.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from typing import Any

import tilelang
import tvm
import tvm_ffi
from tilelang import instrumentation as tl_instr

import lower_trace

from ..capture.naming import call_sites, factory_name
from ..config import mode_variable_is_set
from ..capture.session import CompileSession, current_codegen
from ..capture.tracker import PassTracker

TOOL_NAME = "lower-trace"

# Passes TileLang runs outside a named pipeline, placed by the function that ran them.
_PHASE_OF_FUNCTION = (
    ("PreLowerSemanticCheck", "semantic_check"),
    ("_prepare_device_codegen_mod", "device_codegen_prep"),
    ("device_codegen_without_compile", "device_codegen_prep"),
    ("device_codegen", "device_codegen_prep"),
    ("host_codegen", "host_codegen_prep"),
    ("lower_to_host_device_ir", "host_device_split"),
)
_LANGUAGE_OF_CODEGEN = (
    ("cutedsl", "python"),
    ("cuda", "cuda"),
    ("hip", "hip"),
    ("metal", "metal"),
    ("webgpu", "wgsl"),
    ("ascend", "ascendc"),
    ("llvm", "llvm"),
    ("tilelang_c", "c"),
)
_SKIP_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) for module in (tvm, tvm_ffi, lower_trace)
)
_PASS_CALL = tvm.ir.transform.Pass.__call__.__code__
_TrackerInstrument = tvm.ir.instrument.pass_instrument(PassTracker)
# The FFI constructor takes attrs as the DictAttrs object itself (IRModule() would re-wrap them).
_make_module = tvm.ir.module._ffi_api.IRModule
_make_source_module = tvm_ffi.get_global_func("runtime.CSourceModuleCreate")
# TileLang's source post-processing hooks: (global function, language, role). They run on
# the generated code before any compiler sees it, in every backend.
_POSTPROC_HOOKS = (
    ("tilelang_callback_cuda_postproc", "cuda", "device"),
    ("tilelang_callback_hip_postproc", "hip", "device"),
    ("tilelang_callback_c_host_postproc", "c", "host"),
)


def versions() -> dict[str, str]:
    return {"tilelang": str(getattr(tilelang, "__version__", "")), "tvm": str(getattr(tvm, "__version__", ""))}


class TileLangIR:
    """The IRAdapter that capture uses: printing, identity, names, context."""

    def print_ir(self, mod: Any) -> str:
        return mod.script()

    def identity(self, mod: Any) -> tuple[Any, ...]:
        """The module's parts, held by reference: passes may update an IRModule in
        place (SplitHostDevice does), but never the functions and attrs it holds
        while we keep a reference to them (TVM copies on write when shared)."""
        parts = sorted(((gv.name_hint, gv, func) for gv, func in mod.functions.items()), key=lambda item: item[0])
        return (mod.attrs, mod.global_infos, tuple(parts))

    def rebuild(self, identity: tuple[Any, ...]) -> Any:
        """A module with exactly the captured content (prints the same as the original did)."""
        attrs, infos, parts = identity
        return _make_module({gv: func for _, gv, func in parts}, attrs, infos)

    def same(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
        return self._compare(a, b, _same_object)

    def equivalent(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
        """Structural equality: about ten times cheaper than printing both modules."""
        try:
            return self._compare(a, b, tvm.ir.structural_equal)
        except Exception:
            return False

    @staticmethod
    def _compare(a: tuple[Any, ...], b: tuple[Any, ...], equal: Any) -> bool:
        (attrs_a, infos_a, funcs_a), (attrs_b, infos_b, funcs_b) = a, b
        if len(funcs_a) != len(funcs_b):
            return False

        def same_part(x: Any, y: Any) -> bool:
            if x is None or y is None:
                return x is y
            return _same_object(x, y) or bool(equal(x, y))

        return (
            same_part(attrs_a, attrs_b)
            and same_part(infos_a, infos_b)
            and all(name_a == name_b and same_part(fa, fb) for (name_a, _, fa), (name_b, _, fb) in zip(funcs_a, funcs_b))
        )

    def kernel_name(self, mod: Any) -> str:
        try:
            names = sorted(gv.name_hint for gv in mod.get_global_vars())
        except Exception:
            return "kernel"
        return "+".join(names) if names else "kernel"

    def compile_context(self) -> dict[str, Any]:
        context: dict[str, Any] = {}
        target = tvm.target.Target.current(allow_none=True)
        if target is not None:
            context["target"] = str(target.kind.name) + (f" -arch={target.attrs['arch']}" if "arch" in target.attrs else "")
        try:
            config = tvm.transform.PassContext.current().config
            context["pass_configs"] = {str(key): str(value) for key, value in config.items()}
        except Exception:
            context["pass_configs"] = {}
        return context

    def pass_origin(self, name: str, depth: int, parent_phase: str) -> tuple[str, str, str]:
        """(phase, caller function, better name for an anonymous pass)."""
        phase = tl_instr.current_pass_phase() or ""
        if phase and name != "pass_fn":
            sites, _ = call_sites(_SKIP_DIRS, limit=1)  # just the caller: a short walk
            return phase, sites[0].function if sites else "", ""
        sites, pass_calls = call_sites(_SKIP_DIRS, marker=_PASS_CALL)
        caller = sites[0].function if sites else ""
        if not phase:
            phase = _infer_phase(sites) or parent_phase or (f"python:{caller}" if caller else "python")
        better = ""
        # Name `pass_fn` after the factory on the calling line, but only when Python
        # called this pass itself (one Pass.__call__ frame per nesting level).
        if name == "pass_fn" and sites and pass_calls == depth + 1:
            better = factory_name(sites[0]) or ""
        return phase, caller, better

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

    def kernel_signature(self, mod: Any) -> str:
        """Names, shapes and dtypes of the kernel's buffers: which of same-named kernels this is."""
        parts = []
        for gv, func in sorted(mod.functions.items(), key=lambda item: item[0].name_hint):
            buffers = getattr(func, "buffer_map", None) or {}
            params = [f"{b.name}:{list(b.shape)}:{b.dtype}" for b in buffers.values()]
            parts.append(f"{gv.name_hint}({', '.join(params)})")
        return "; ".join(parts)

    def source_module(self, text: str, language: str) -> Any:
        """A source-only runtime module holding text, for backends that compile kernel_source."""
        return _make_source_module(text, language, [], [])

    def codegen_info(self, function: str, target: Any) -> tuple[str, str, str]:
        role = "host" if function.endswith("_host") or function == "target.build.llvm" else "device"
        language = next((lang for key, lang in _LANGUAGE_OF_CODEGEN if key in function), "")
        try:
            kind = str(target.kind.name)
            arch = target.attrs["arch"] if "arch" in target.attrs else ""
            text = kind + (f" -arch={arch}" if arch else "")
        except Exception:
            text = str(target)
        return role, language or text.split()[0], text


def _same_object(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return a is b or a.same_as(b)


def _infer_phase(sites: list[Any]) -> str:
    for site in sites:
        short = site.function.rsplit(".", 1)[-1]
        for function, phase in _PHASE_OF_FUNCTION:
            if short == function:
                return phase
    return ""


class _Tool(tl_instr.PassInstrumentationTool):
    """One per compile: TileLang creates it when a compile session opens."""

    def __init__(self, run: Any) -> None:
        self._run = run
        self._ir = TileLangIR()
        self._session: CompileSession | None = None

    def _current(self) -> CompileSession:
        if self._session is None:
            compile_session = tl_instr.current_compile_pass_instrumentation()
            entry = str(getattr(compile_session, "name", "") or "")
            self._session = CompileSession(self._run, self._ir, entry=entry)
        return self._session

    def create_pass_instrument(self) -> Any:
        try:
            return _TrackerInstrument(self._current())
        except Exception as exc:
            self._run.tracer_fault(exc)
            return None

    def pipeline_scope(self, base_phase: str) -> Any:
        return nullcontext()

    def run_codegen(self, event: Any, next_call: Any) -> Any:
        return self._current().codegen(str(event.name), event.mod, event.target, next_call)

    def finish(self, error: BaseException | None) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        try:
            session.finish(error)
        except Exception as exc:
            self._run.tracer_fault(exc)


def _edit_hook(previous: Any, language: str) -> Any:
    def postproc(code: Any, target: Any) -> str:
        code = str(previous(code, target)) if previous is not None else str(code)
        active = current_codegen.get()
        if active is None or active.language != language:
            return code  # not a traced compile (or another language's hook)
        return active.session.edit_source(active, code)

    return postproc


class TileLangIntegration:
    """Attach to / detach from an imported TileLang."""

    def __init__(self, get_run: Any) -> None:
        self._get_run = get_run
        self._cache_was_enabled: bool | None = None
        self._replaced_hooks: list[tuple[str, Any]] = []

    def install(self) -> None:
        run = self._get_run()
        run.info.versions.update(versions())
        self._switch_off_builtin(run)
        tl_instr.register_pass_instrumentation_tool(TOOL_NAME, lambda: _Tool(self._get_run()))
        self._install_source_hooks()
        # A kernel served from TileLang's cache runs no pass and would leave an empty
        # trace; while tracing, every kernel is compiled afresh (restored on disable()).
        if tilelang.is_cache_enabled():
            self._cache_was_enabled = True
            tilelang.disable_cache()
            run.note("TileLang's kernel cache is bypassed while tracing, so every kernel is compiled and traced", once="cache")

    def uninstall(self) -> None:
        tl_instr.unregister_pass_instrumentation_tool(TOOL_NAME)
        for name, previous in reversed(self._replaced_hooks):
            if previous is None:
                tvm_ffi.remove_global_func(name)
            else:
                tvm_ffi.register_global_func(name, previous, override=True)
        self._replaced_hooks = []
        if self._cache_was_enabled:
            tilelang.enable_cache()
            self._cache_was_enabled = None

    def _install_source_hooks(self) -> None:
        """Chain our edit step after any post-processing callback already registered."""
        for name, language, role in _POSTPROC_HOOKS:
            previous = tvm_ffi.get_global_func(name, allow_missing=True)
            tvm_ffi.register_global_func(name, _edit_hook(previous, language), override=True)
            self._replaced_hooks.append((name, previous))

    @staticmethod
    def _switch_off_builtin(run: Any) -> None:
        """One tracer at a time. If TileLang's built-in started (TileLang was imported
        with TL_LOWER_TRACE set before lower-trace was enabled), stop it through its
        public disable(); either way, say once that ours is the only one writing."""
        import sys

        builtin = sys.modules.get("tilelang.tools.lower_trace")
        if builtin is not None and hasattr(builtin, "disable"):
            builtin.disable()
        if mode_variable_is_set() or builtin is not None:
            run.note("TileLang's built-in lower_trace is off; lower-trace is the only tracer writing", once="builtin")
