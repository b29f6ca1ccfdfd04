"""The SASS architecture an nvcc command compiles for, read off its flags."""
from __future__ import annotations

import re

_CODE = re.compile(r"\bsm_\d+[a-z]?\b")


def sass_arch(flags: list[str] | str) -> str:
    """"sm_90a" from -arch=sm_90a, -arch sm_90a or -gencode arch=compute_90a,code=sm_90a (the first
    SASS code when there are several); "" when the flags name none."""
    text = " ".join(flags) if isinstance(flags, list) else flags
    gencode = re.search(r"code=\[?([^\s\]]+)", text)
    found = _CODE.search(gencode.group(1)) if gencode else None
    found = found or _CODE.search(text)
    return found.group(0) if found else ""
