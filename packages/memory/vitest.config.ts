import { defineProject } from "vitest/config"

export default defineProject({ test: { name: "memory", include: ["test/**/*.test.ts"] } })
