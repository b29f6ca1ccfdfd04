"""What capture needs from a compiler integration: the :class:`IRAdapter` a session talks to.

Capture imports no TVM. An integration (integrations/ir_reading/tvm_ir.py: ``TVMIR``) owns every tvm
import and hands capture *modules* and *identities* it never looks inside:

- a ``Module`` is the compiler's module object (an ``IRModule``), held only while a pass runs;
- an ``Identity`` is a cheap handle on a module's *content* at one moment (a pass may update a
  module object in place, so the object itself is no such handle): a tuple of the module's
  parts, held by reference, that ``same`` compares by pointer and ``rebuild`` turns back into a
  module with exactly that content.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from lower_trace.model import FragmentLayout, PassBuild, PassCall

Module = Any  # the compiler's module object; capture passes it back, never reads it
Identity = tuple[Any, ...]  # the module's parts, held by reference (see the module docstring)


class PassOrigin(NamedTuple):
    """Where a pass runs from: its phase, the Python function that ran it, a better name for an
    anonymous pass ("" when its own is fine), and the arguments it was built with (when known)."""

    phase: str
    caller: str
    better_name: str
    call: PassCall | None


class CodegenInfo(NamedTuple):
    role: str  # "device" or "host"
    language: str  # "cuda", "c", ...
    target: str  # the target as the trace shows it: "cuda -arch=sm_90a"


class CompileContext(NamedTuple):
    target: str  # "" when no target is current
    pass_configs: dict[str, str]


class SnapshotPrinter(Protocol):
    """Prints snapshots of one compile, in order (on the run's worker). It may remember what it
    printed to print the next snapshot faster; the text is always what ``print_ir`` of the
    rebuilt module gives, character for character. With it, the source spans of the text's lines
    (JSON, see analysis/origins.py; "" when the compiler keeps none)."""

    def __call__(self, identity: Identity) -> tuple[str, str]: ...
    def user_files(self) -> list[str]: ...  # the user's files the spans printed so far name


class IRAdapter(Protocol):
    """What a :class:`~lower_trace.capture.session.CompileSession` asks its integration."""

    # --- content: the hot path (every pass) -------------------------------------------------
    def identity(self, mod: Module) -> Identity: ...
    def same(self, a: Identity, b: Identity) -> bool: ...  # the very same content (pointer compares)
    def equivalent(self, a: Identity, b: Identity) -> bool: ...  # structurally equal: prints the same
    def rebuild(self, identity: Identity) -> Module: ...  # a module with exactly that content
    def print_ir(self, mod: Module) -> str: ...
    def snapshot_printer(self) -> SnapshotPrinter: ...  # one per compile, released with it

    # --- the kernel and where its passes run from -------------------------------------------
    def kernel_name(self, mod: Module) -> str: ...
    def kernel_signature(self, mod: Module) -> str: ...  # buffers' names, shapes, dtypes
    def compile_context(self) -> CompileContext: ...
    def pass_origin(self, name: str, depth: int, parent_phase: str) -> PassOrigin: ...
    # The fragment layouts of a pass's output, when its text shows it changed them (else ()).
    def read_layouts(self, before_text: str, after_text: str, identity: Identity) -> tuple[FragmentLayout, ...]: ...

    # --- codegen ---------------------------------------------------------------------------
    def codegen_info(self, function: str, target: Any) -> CodegenInfo: ...
    # Per line of `source` (codegen `function`'s output for mod), the line of `tir_text` it came
    # from, as JSON; "" when this compiler cannot say. On the worker, after the compile's codegen.
    def codegen_line_map(self, function: str, mod: Module, target: Any, configs: dict[str, Any], source: str, tir_text: str) -> str: ...
    def codegen_configs(self) -> dict[str, Any]: ...  # the current PassContext's configs, as the compiler holds them
    def spans_problem(self) -> str: ...  # why lines cannot be traced to the user's source here; "" when they can
    def user_stack(self) -> tuple[tuple[str, int, str], ...]: ...  # the user's frames now: [file, line, function]
    def module_source(self, runtime_mod: Any) -> str: ...  # the generated source ("" if none)
    def source_module(self, text: str, language: str) -> Any: ...  # a runtime module holding text

    # --- reproducers and replay: the content as TVM JSON, what a pass runs under, how to build it
    def module_json(self, identity: Identity) -> str: ...
    def json_problem(self) -> str: ...  # why TVM's JSON cannot be used here; "" when it can
    def replay_context(self) -> dict[str, Any]: ...  # JSON values: target, typed pass configs
    def pass_build(self, name: str, call: PassCall | None, nested_in: str = "") -> PassBuild | str: ...
