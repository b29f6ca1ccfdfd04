"""How tracing attaches to a compiler: one adapter per compiler (TileLang 0.1.15+, older TileLang,
plain TVM), chosen by integrations/__init__.py, and what they share to run a compile traced."""
