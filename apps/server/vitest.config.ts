import { defineProject } from "vitest/config"
import { sharedModules } from "../../packages/testing/src/vitest-shared-modules.js"

export default defineProject({
  test: {
    name: "server",
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // The process tests run the server built as `pnpm start` builds it.
    globalSetup: ["test/global-setup.ts"],
    ...sharedModules
  }
})
