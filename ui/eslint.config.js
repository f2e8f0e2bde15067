// Lint rules of the window's code. The one that matters most: nothing outside src/backend/ may import
// @tauri-apps/* — every call to Rust goes through the Backend interface.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";

export default tseslint.config(
  { ignores: ["dist", "node_modules", "src/backend/bindings.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["src/**/*.{ts,tsx}"],
    languageOptions: { globals: globals.browser },
    plugins: { "react-hooks": reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@tauri-apps/*"],
              message: "Only src/backend/ talks to Tauri: go through the Backend interface (useBackend()).",
            },
            {
              group: ["**/backend/tauri", "**/backend/http", "**/backend/bindings"],
              message:
                "Import types and the Backend from src/backend/backend.ts; which implementation (Tauri, HTTP) runs is chosen in main.tsx only: no view knows.",
            },
          ],
        },
      ],
      "no-restricted-syntax": [
        "error",
        {
          selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']",
          message: "Agent text is rendered as text only.",
        },
      ],
    },
  },
  {
    files: ["src/backend/**/*.{ts,tsx}", "src/main.tsx"],
    rules: { "no-restricted-imports": "off" },
  },
  {
    files: ["e2e/**/*.{js,mjs}", "*.config.{js,ts}"],
    languageOptions: { globals: globals.node },
  },
);
