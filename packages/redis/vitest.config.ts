import { defineProject } from "vitest/config"
import { sharedModules } from "../testing/src/vitest-shared-modules.js"

// The sliding-window cases wait out real (short) windows, and the failure cases real cool-downs.
export default defineProject({
  test: { name: "redis", include: ["test/**/*.test.ts"], testTimeout: 30_000, ...sharedModules }
})
