import { defineProject } from "vitest/config"
import { sharedModules } from "../testing/src/vitest-shared-modules.js"

export default defineProject({
  test: { name: "node", include: ["test/**/*.test.ts"], testTimeout: 30_000, ...sharedModules }
})
