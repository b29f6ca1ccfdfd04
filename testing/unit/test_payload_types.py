"""assets/payload.js types, for the page's checker (tsc), the JSON Python writes into a page. Written by
hand, so each typedef is held here to the Python it names: its properties are exactly the fields
of the model's dataclass, or the keys of the dict the writing function builds (read from its source),
so a field added on one side only fails here. Independent truth: the dataclasses themselves and
the functions' own source, not a list kept in this test."""

import ast
import dataclasses
import inspect
import os
import re
import textwrap

import pytest

from lower_trace import model
from lower_trace.render.report import compare_page, origins_data, page, writer
from support import ROOT

PAYLOAD_JS = os.path.join(ROOT, "lower_trace", "render", "report", "assets", "payload.js")


def typedefs():
    """{typedef name: its property names} of payload.js's @typedef {Object} blocks."""
    with open(PAYLOAD_JS, encoding="utf-8") as source:
        text = source.read()
    found = {}
    for comment in re.findall(r"/\*\*(.*?)\*/", text, re.S):
        named = re.search(r"@typedef \{Object\} (\w+)", comment)
        if not named:
            continue
        props = set()
        for at in re.finditer(r"@property ", comment):
            i, depth = at.end(), 0
            while True:  # past the type, braces balanced: {{a: string}|null}
                depth += {"{": 1, "}": -1}.get(comment[i], 0)
                i += 1
                if depth == 0:
                    break
            name = re.match(r"\s*\[?(\w+)", comment[i:])
            assert name, comment[i:]
            props.add(name.group(1))
        found[named.group(1)] = props
    return found


def fields(cls):
    return {f.name for f in dataclasses.fields(cls)}


def tree(function):
    return ast.parse(textwrap.dedent(inspect.getsource(function)))


def dict_keys(node):
    return {key.value for key in node.keys if isinstance(key, ast.Constant)}


def own_nodes(function):
    """The nodes of the function's body, without those of functions defined inside it."""
    inner = (ast.FunctionDef, ast.Lambda)
    definition = tree(function).body[0]
    assert isinstance(definition, ast.FunctionDef)
    stack: list[ast.AST] = [node for node in definition.body if not isinstance(node, inner)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, inner))


def returned_keys(function):
    """The keys of the dict literal(s) the function returns."""
    return set().union(*(dict_keys(n.value) for n in own_nodes(function) if isinstance(n, ast.Return) and isinstance(n.value, ast.Dict)))


def assigned_keys(function, name):
    """The keys a function gives the dict `name`: its literal, and name["key"] = … after it."""
    keys = set()
    for node in own_nodes(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):
                    keys |= dict_keys(node.value)
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == name
                    and isinstance(target.slice, ast.Constant)
                ):
                    keys.add(target.slice.value)
    return keys


def appended_keys(function, name):
    """The keys of the dict literals the function appends to the list `name`."""
    keys = set()
    for node in own_nodes(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append":
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == name and node.args and isinstance(node.args[0], ast.Dict):
                keys |= dict_keys(node.args[0])
    return keys


def nested_keys(function, key):
    """The keys of the dict literal given to `key` in the function's returned dict."""
    for node in own_nodes(function):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == key and isinstance(v, ast.Dict):
                    return dict_keys(v)
    raise AssertionError(f"{function.__name__} gives {key!r} no dict literal")


PYTHON = {
    "LTError": lambda: fields(model.ErrorInfo),
    "LTRun": lambda: fields(model.RunInfo) | assigned_keys(page.page_head, "header"),
    "LTPassCall": lambda: fields(model.PassCall),
    "LTFragmentLayout": lambda: fields(model.FragmentLayout),
    "LTStep": lambda: fields(model.PassRecord) | fields(model.CodegenRecord) | assigned_keys(page.kernel_steps, "item"),
    "LTKernelStates": lambda: {state.name for state in model.KernelState},
    "LTRules": lambda: returned_keys(page.page_rules),
    "LTReportHeader": lambda: assigned_keys(page.page_head, "data"),
    "LTCompareHeader": lambda: assigned_keys(compare_page.write_compare_page, "header"),
    "LTKernelSummary": lambda: returned_keys(page.kernel_summary),
    "LTDeviceIndex": lambda: returned_keys(page.device_index),
    "LTDevice": lambda: returned_keys(page.device_payload),
    "LTPayload": lambda: assigned_keys(writer.ReportWriter.add_kernel, "payload"),
    "LTComparisonData": lambda: returned_keys(compare_page.comparison_data),
    "LTComparedKernel": lambda: nested_keys(compare_page.comparison_data, "a"),
    "LTOriginsData": lambda: returned_keys(origins_data.origins_payload),
    "LTLaunches": lambda: returned_keys(page.launches_index),
    "LTLaunchRow": lambda: appended_keys(page.launches_index, "rows"),
    "LTLaunchValue": lambda: returned_keys(page._launch_value),
}


def test_every_typedef_of_the_payload_is_held_to_its_python():
    assert set(typedefs()) == set(PYTHON), "a typedef of payload.js without its Python here, or gone"


@pytest.mark.parametrize("name", sorted(PYTHON))
def test_a_typedef_has_exactly_the_fields_python_writes(name):
    declared, written = typedefs()[name], PYTHON[name]()
    assert written, f"no keys found for {name}: the test reads the wrong function"
    assert declared == written, f"{name}: only in payload.js {sorted(declared - written)}, only in Python {sorted(written - declared)}"
