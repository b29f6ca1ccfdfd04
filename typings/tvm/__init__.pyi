# For pyright only (pyproject.toml [tool.pyright]): TVM is found at run time (TileLang puts its
# bundled TVM on sys.path; plain Apache TVM lives in another venv) and most of its Python API is
# registered through its FFI, so a type checker cannot see it. Everything in it is typed Any.
from typing import Any

def __getattr__(name: str) -> Any: ...
