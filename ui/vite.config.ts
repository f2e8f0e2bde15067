// Vite builds the window's assets into dist/ (embedded by the app crate); vitest runs the unit tests
// against the fake Backend in jsdom.
import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";
import { fileURLToPath } from "node:url";

export default defineConfig({
  plugins: [react()],
  // See src/features/policy/source/noIdnEmail.ts: a dependency that cannot load under frozen prototypes.
  resolve: { alias: { "smtp-address-parser": fileURLToPath(new URL("./src/features/policy/source/noIdnEmail.ts", import.meta.url)) } },
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  // The policy workbench chunk (CodeMirror and the schema tooling, ~940 kB) loads when first opened.
  build: { target: "safari16", outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1200 },
  test: {
    environment: "jsdom",
    setupFiles: ["./src/test/setup.ts"],
    include: ["src/**/*.test.{ts,tsx}"],
    // Its published ES build has extensionless imports Node cannot resolve: vitest bundles it instead.
    server: { deps: { inline: ["codemirror-json-schema"] } },
  },
});
