import { defineProject } from "vitest/config"
import { sharedModules } from "../testing/src/vitest-shared-modules.js"

// PGlite's first start (initdb in WebAssembly) and the real-Postgres concurrency tests
// take seconds, not milliseconds.
export default defineProject({
  test: {
    name: "postgres",
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    ...sharedModules
  }
})
