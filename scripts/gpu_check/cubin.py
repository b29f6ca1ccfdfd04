"""A kernel's resources as the cubin itself and the CUDA driver state them, for the GPU check.

Two readers that share nothing with lower-trace's device stage (which takes ptxas' report):
- `cubin_attributes`: the cubin's own ELF records -- EIATTR_REGCOUNT and EIATTR_FRAME_SIZE (the
  per-thread local frame: stack, spills included) in `.nv.info`, static shared memory as the size
  of `.nv.shared.<kernel>`.
- `driver_attributes`: libcuda through ctypes (no Python package needed): cuModuleLoadData on
  the very bytes, cuModuleGetFunction, cuFuncGetAttribute -- what the driver uses to launch it.
Standard library only: it runs in the check's venv on the GPU machine and here.
"""

from __future__ import annotations

import ctypes
import struct

EIATTR_FRAME_SIZE = 0x11
EIATTR_REGCOUNT = 0x2F
RESERVED_SHARED = 1024  # what sm_80 and later reserve per block (CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
SHF_NOBITS = 8

# CUfunction_attribute values (cuda.h)
DRIVER_ATTRIBUTES = {
    "max_threads_per_block": 0,
    "shared_static": 1,  # CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
    "const_bytes": 2,
    "local_bytes": 3,  # CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: the per-thread local frame
    "registers": 4,  # CU_FUNC_ATTRIBUTE_NUM_REGS
    "ptx_version": 5,
    "binary_version": 6,
}


def _sections(blob: bytes) -> list[tuple[str, int, int, int, int]]:
    """(name, type, offset, size, info) of each section of a 64-bit little-endian ELF."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF (a cubin)")
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4]

    def name(offset: int) -> str:
        end = blob.index(b"\0", names_at + offset)
        return blob[names_at + offset : end].decode("ascii", "replace")

    return [(name(s[0]), s[1], s[4], s[5], s[7]) for s in raw]


def kernel_names(blob: bytes) -> list[str]:
    return [name[len(".text.") :] for name, *_ in _sections(blob) if name.startswith(".text.")]


def _info_entries(blob: bytes, offset: int, size: int) -> list[tuple[int, bytes]]:
    """(attribute, value) of each EIATTR record of an .nv.info section."""
    entries, at, end = [], offset, offset + size
    while at + 2 <= end:
        fmt, attr = blob[at], blob[at + 1]
        at += 2
        if fmt == 0x04:  # EIFMT_SVAL: u16 length, then the value
            length = struct.unpack_from("<H", blob, at)[0]
            entries.append((attr, blob[at + 2 : at + 2 + length]))
            at += 2 + length
        elif fmt in (0x02, 0x03):  # EIFMT_BVAL, EIFMT_HVAL: a u16
            entries.append((attr, blob[at : at + 2]))
            at += 2
        elif fmt == 0x01:  # EIFMT_NVAL: no value
            entries.append((attr, b""))
        else:
            break
    return entries


def cubin_attributes(blob: bytes, kernel: str) -> dict[str, int]:
    """registers, shared memory and the local frame of `kernel`, read off the cubin's ELF records.

    The kernel's symbol is the `.text.<kernel>` section's sh_info (low 24 bits); the global
    `.nv.info` gives that symbol's EIATTR_REGCOUNT and EIATTR_FRAME_SIZE. Static shared memory
    is the `.nv.shared.<kernel>` section's size, which on sm_90 begins with the 1 KiB the driver
    reserves per block (a `.nv.shared.reserved.*` section marks it): `shared_reserved`."""
    sections = _sections(blob)
    text = [info for name, _kind, _offset, _size, info in sections if name == f".text.{kernel}"]
    if not text:
        raise ValueError(f"the cubin has no kernel {kernel!r} (it has {', '.join(kernel_names(blob)) or 'none'})")
    symbol = text[0] & 0xFFFFFF
    found = {"registers": text[0] >> 24, "shared_section": 0, "shared_reserved": 0, "local_bytes": 0}
    for name, kind, offset, size, _info in sections:
        if name == f".nv.shared.{kernel}":
            found["shared_section"] = size
        elif name.startswith(".nv.shared.reserved."):
            found["shared_reserved"] = RESERVED_SHARED
        elif name == ".nv.info" and kind != SHF_NOBITS:
            for attr, value in _info_entries(blob, offset, size):
                if len(value) == 8 and struct.unpack_from("<I", value)[0] == symbol:
                    if attr == EIATTR_REGCOUNT:
                        found["registers"] = struct.unpack_from("<I", value, 4)[0]
                    elif attr == EIATTR_FRAME_SIZE:
                        found["local_bytes"] = struct.unpack_from("<I", value, 4)[0]
    found["shared_static"] = max(0, found["shared_section"] - found["shared_reserved"])
    return found


class DriverError(RuntimeError):
    pass


def driver_attributes(blob: bytes, kernel: str) -> dict[str, int]:
    """What the CUDA driver says of `kernel` once it has loaded these bytes (needs a GPU)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise DriverError(f"no CUDA driver: {exc}") from exc

    def call(what: str, status: int) -> None:
        if status != 0:
            text = ctypes.c_char_p()
            cuda.cuGetErrorString(status, ctypes.byref(text))
            raise DriverError(f"{what} failed: {status} {(text.value or b'').decode(errors='replace')}")

    call("cuInit", cuda.cuInit(0))
    context = ctypes.c_void_p()
    call("cuCtxGetCurrent", cuda.cuCtxGetCurrent(ctypes.byref(context)))
    if not context.value:  # no context on this thread yet: the primary one of device 0 (torch's)
        device = ctypes.c_int()
        call("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(device), 0))
        call("cuDevicePrimaryCtxRetain", cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
        call("cuCtxSetCurrent", cuda.cuCtxSetCurrent(context))
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    image = ctypes.create_string_buffer(bytes(blob), len(blob))
    call("cuModuleLoadData", cuda.cuModuleLoadData(ctypes.byref(module), image))
    try:
        call("cuModuleGetFunction", cuda.cuModuleGetFunction(ctypes.byref(function), module, kernel.encode()))
        values = {}
        for name, attribute in DRIVER_ATTRIBUTES.items():
            value = ctypes.c_int()
            call(f"cuFuncGetAttribute({name})", cuda.cuFuncGetAttribute(ctypes.byref(value), attribute, function))
            values[name] = value.value
        return values
    finally:
        cuda.cuModuleUnload(module)
