"""TileLang's source post-processing hooks with our edit step chained after them: the
working copy's text (capture/source_edits.py's ``edit_source``, bound onto the session) is what the compiler is handed."""

from __future__ import annotations

from typing import Any

import tvm_ffi

from lower_trace.capture.codegen_step import current_codegen

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
