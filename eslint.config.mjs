// eslint (flat config): the report page's JS with eslint's recommended rules. The assets are ES
// modules (each imports what it uses from the others); render/report/bundle.py inlines them into
// one script of the page, in the order their imports give.
// scripts/test.sh runs it; scripts/env.sh --test installs the pinned eslint into node_modules/.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: [".venvs/", "build/", "dist/", "tmp/"] },
  {
    files: ["lower_trace/render/report/assets/*.js"],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.browser } },
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },
  {
    files: ["eslint.config.mjs"],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.node } },
  },
];
