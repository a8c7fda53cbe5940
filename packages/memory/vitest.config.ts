import { defineProject } from "vitest/config"
import { sharedModules } from "../testing/src/vitest-shared-modules.js"

export default defineProject({ test: { name: "memory", include: ["test/**/*.test.ts"], ...sharedModules } })
