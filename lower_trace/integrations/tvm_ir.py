"""The TVM side every integration shares: printing, identity and rebuilding of IR
modules, names and signatures, codegen descriptions, and TileLang's source hooks.

A :class:`TVMIR` is the ``IRAdapter`` capture needs (capture/ports.py). Each
integration gives it a *phase provider*: where the compiler itself names the
phase (TileLang 0.1.15's pipeline scopes, the legacy adapter's patched phase
functions); passes outside any named phase are placed by the Python function
that ran them (``phase_rules``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable, Sequence
from typing import Any

import tvm
import tvm_ffi

from lower_trace.capture.ir_adapter import CodegenInfo, CompileContext, Identity, Module, PassOrigin, SnapshotPrinter
from lower_trace.capture.naming import CallSite, call_shape, call_sites, factory_name
from lower_trace.capture.session import CompileSession, current_codegen
from lower_trace.capture.sink import TraceSink
from lower_trace.capture.tracker import GatedTracker, PassTracker
from lower_trace.integrations import pass_calls, replay, tir_spans
from lower_trace.integrations.tvm_print import ReusingPrinter, function_items, same_object, same_parts, structural_equal
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
LOWER_TRACE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_DIRS = (*(os.path.dirname(os.path.abspath(str(module.__file__))) for module in (tvm, tvm_ffi)), LOWER_TRACE_DIR)
_PASS_CALL = tvm.ir.transform.Pass.__call__.__code__
TrackerInstrument = tvm.ir.instrument.pass_instrument(PassTracker)
GatedInstrument = tvm.ir.instrument.pass_instrument(GatedTracker)


def instrument_for(session: CompileSession) -> Any:
    """The PassInstrument for a session: with should_run only under lower-trace bisect."""
    return (GatedInstrument if session.run.gate is not None else TrackerInstrument)(session)
# The FFI constructor takes attrs as the DictAttrs object itself (IRModule() would re-wrap them).
_make_module = tvm.ir.module._ffi_api.IRModule
_make_source_module = tvm_ffi.get_global_func("runtime.CSourceModuleCreate", allow_missing=True)

PhaseRules = Sequence[tuple[str, str]]
# Names TVM gives passes built from plain functions or lists.
ANONYMOUS_PASSES = ("sequential", "_pipeline")


def run_traced(
    run: TraceSink,
    session_var: Any,
    new_session: Callable[[], CompileSession],
    call: Callable[[], Any],
    attach: bool = True,
) -> Any:
    """Run call() as a traced compile, for integrations without TileLang's instrumentation API.

    With no session in session_var, a new one is opened and finished here (with the
    error, if call raises). With attach, our tracker joins the instruments of the
    current PassContext for the duration (unless the session already has one there).
    Faults of the tracer fall back to running call() untraced.
    """
    session = session_var.get()
    owner = session is None
    attach = attach and (owner or not session.attached)
    context = previous = None
    try:
        if owner:
            session = new_session()
        if attach:
            context = tvm.transform.PassContext.current()
            previous = list(context.instruments)
            context.override_instruments([*previous, instrument_for(session)])
            session.attached = True
    except Exception as exc:
        run.tracer_fault(exc)
        return call()
    token = session_var.set(session) if owner else None
    error: BaseException | None = None
    try:
        return call()
    except BaseException as exc:
        error = exc
        raise
    finally:
        try:
            if context is not None:
                context.override_instruments(previous)  # closes our tracker: failed passes are known now
                session.attached = False
            if owner:
                session_var.reset(token)
                session.finish(error)
        except Exception as exc:
            run.tracer_fault(exc)


class GlobalFunctions:
    """TVM global functions re-registered with a wrapper; restore() puts back the originals."""

    def __init__(self) -> None:
        self._replaced: list[tuple[str, Any]] = []

    def wrap(self, prefix: str, make_wrapper: Callable[[str, Any], Any]) -> None:
        for name in tvm_ffi.registry.list_global_func_names():
            if name.startswith(prefix):
                original = tvm_ffi.get_global_func(name)
                tvm_ffi.register_global_func(name, make_wrapper(name, original), override=True)
                self._replaced.append((name, original))

    def restore(self) -> None:
        for name, original in reversed(self._replaced):
            tvm_ffi.register_global_func(name, original, override=True)
        self._replaced = []


def tvm_version() -> str:
    return str(getattr(tvm, "__version__", ""))


# Python's own modules and installed packages (pytest, runpy, ...) are no frames of the user's program.
_STDLIB = tuple(os.path.join(sysconfig.get_paths()[name], "") for name in ("stdlib", "purelib", "platlib"))
_STACK_DEPTH = 24  # frames of the user's program kept per compile, innermost first


class _PlainPrinter:
    """Snapshots without spans."""

    def __init__(self, printer: ReusingPrinter) -> None:
        self._printer = printer

    def __call__(self, identity: Identity) -> tuple[str, str]:
        return self._printer(identity), ""

    def user_files(self) -> list[str]:
        return []


class _SpanSnapshotPrinter:
    """Snapshots printed with span markers (pieced together by ReusingPrinter, markers and all),
    split into the plain text and its spans."""

    def __init__(self, ir: TVMIR, spans: tir_spans.SpanPrinter) -> None:
        self._ir = ir
        self._spans = spans
        self._printer = ReusingPrinter(spans.print_marked)

    def __call__(self, identity: Identity) -> tuple[str, str]:
        return self._spans.split(self._printer(identity), lambda: self._ir.rebuild(identity))

    def user_files(self) -> list[str]:
        files = self._spans.files
        return [name for name in files.names if not files.is_library(name) and os.path.isfile(name)]


class TVMIR:
    """The IRAdapter that capture uses: printing, identity, names, context."""

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
        self.layouts = layouts  # TileLang: fragment layouts are read for the report's pictures
        # The compiler's own Python (TileLang's pipelines): its calls' arguments are evaluated again whatever they hold.
        self.library_dirs = tuple(os.path.join(d, "") for d in library_dirs)
        self.phase_provider = phase_provider
        self.phase_rules = phase_rules
        self.skip_dirs = tuple(skip_dirs)
        self.phase_of_sites = phase_of_sites or (lambda sites: _infer_phase(sites, self.phase_rules))

    def print_ir(self, mod: Module) -> str:
        return mod.script()

    def snapshot_printer(self) -> SnapshotPrinter:
        """Prints a compile's snapshots, reusing the text of functions that did not change (tvm_print.py),
        with their statements' source spans where the compiler keeps them (tir_spans.py)."""
        if self._spans_problem:
            return _PlainPrinter(ReusingPrinter(self.print_ir))
        return _SpanSnapshotPrinter(self, tir_spans.SpanPrinter(self.print_ir, (*self.library_dirs, *self.skip_dirs)))

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

    def user_stack(self) -> tuple[tuple[str, int, str], ...]:
        """The frames of the user's program now (not TileLang's, TVM's, ours or Python's own), outermost first."""
        skip = (*self.library_dirs, *(os.path.join(d, "") for d in self.skip_dirs), *_STDLIB)
        frames: list[tuple[str, int, str]] = []
        frame = sys._getframe(1)
        while frame is not None and len(frames) < _STACK_DEPTH:
            name = frame.f_code.co_filename
            if not name.startswith(skip) and not name.startswith("<"):
                frames.append((name, frame.f_lineno, frame.f_code.co_name))
            frame = frame.f_back
        return tuple(reversed(frames))

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
        from lower_trace.integrations import tilelang_layouts

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

    def pass_origin(self, name: str, depth: int, parent_phase: str) -> PassOrigin:
        """(phase, caller function, better name for an anonymous pass, the arguments Python built
        it with when its factory takes some)."""
        phase = self.phase_provider() or ""
        if phase and name != "pass_fn":
            sites, _ = call_sites(self.skip_dirs, limit=1)  # just the caller: a short walk
            return PassOrigin(phase, sites[0].function if sites else "", "", self._call(sites, name, depth))
        sites, pass_calls = call_sites(self.skip_dirs, marker=_PASS_CALL)
        caller = sites[0].function if sites else ""
        if not phase:
            phase = self.phase_of_sites(sites) or parent_phase or (f"python:{caller}" if caller else "python")
        better = ""
        # Name `pass_fn` after the factory on the calling line, but only when Python called this
        # pass itself (one Pass.__call__ frame per nesting level).
        if (name == "pass_fn" or name in ANONYMOUS_PASSES) and sites and pass_calls == depth + 1:
            better = factory_name(sites[0]) or ""
        return PassOrigin(phase, caller, better, self._call(sites, name, depth))

    def _call(self, sites: list[CallSite], name: str, depth: int) -> PassCall | None:
        """A top-level pass built on the caller's line with arguments: those arguments, written down."""
        site = sites[0] if sites else None
        if depth or site is None or site.frame is None:
            return None
        shape = call_shape(site, name.rsplit(".", 1)[-1])
        if shape is None:
            return None
        return pass_calls.recorded_call(shape, site.frame, site.filename.startswith(self.library_dirs) if self.library_dirs else False)

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
            params = [f"{b.name}:{list(b.shape)}:{b.dtype}" for b in buffers.values()]
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


def _infer_phase(sites: list[CallSite], rules: PhaseRules) -> str:
    for site in sites:
        short = site.function.rsplit(".", 1)[-1]
        for function, phase in rules:
            if short == function:
                return phase
    return ""


# TileLang's source post-processing hooks: (global function, language). They run on the
# generated code before any compiler sees it, in every backend (0.1.9 and later).
POSTPROC_HOOKS = (
    ("tilelang_callback_cuda_postproc", "cuda"),
    ("tilelang_callback_hip_postproc", "hip"),
    ("tilelang_callback_c_host_postproc", "c"),
)


class SourceHooks:
    """Our edit step chained after whatever post-processing callback was registered; undone exactly."""

    def __init__(self) -> None:
        self._replaced: list[tuple[str, Any]] = []

    def install(self) -> None:
        for name, language in POSTPROC_HOOKS:
            previous = tvm_ffi.get_global_func(name, allow_missing=True)
            tvm_ffi.register_global_func(name, _edit_hook(previous, language), override=True)
            self._replaced.append((name, previous))

    def uninstall(self) -> None:
        for name, previous in reversed(self._replaced):
            if previous is None:
                tvm_ffi.remove_global_func(name)
            else:
                tvm_ffi.register_global_func(name, previous, override=True)
        self._replaced = []


def _edit_hook(previous: Any, language: str) -> Any:
    def postproc(code: Any, target: Any) -> str:
        code = str(previous(code, target)) if previous is not None else str(code)
        active = current_codegen.get()
        if active is None or active.language != language:
            return code  # not a traced compile (or another language's hook)
        return active.session.edit_source(active, code)

    return postproc


