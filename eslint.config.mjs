// eslint (flat config): the report page's JS with eslint's recommended rules. The assets are
// classic scripts, inlined into one page in the order of render/report/page.py's SCRIPTS; each
// names the page modules it uses in a /* global */ comment and the one it defines in /* exported */.
// scripts/test.sh runs it; scripts/env.sh --test installs the pinned eslint into node_modules/.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: [".venvs/", "build/", "dist/", "tmp/"] },
  {
    files: ["lower_trace/render/report/assets/*.js"],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2022, sourceType: "script", globals: { ...globals.browser } },
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },
  {
    files: ["eslint.config.mjs"],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.node } },
  },
];
