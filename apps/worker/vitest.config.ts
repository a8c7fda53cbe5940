import { defineProject } from "vitest/config"
import { sharedModules } from "../../packages/testing/src/vitest-shared-modules.js"

export default defineProject({
  test: { name: "worker", include: ["test/**/*.test.ts"], testTimeout: 30_000, ...sharedModules }
})
