import { defineProject } from "vitest/config"
import { sharedModules } from "../testing/src/vitest-shared-modules.js"

export default defineProject({ test: { name: "api", include: ["test/**/*.test.ts"], ...sharedModules } })
