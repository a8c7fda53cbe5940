import { defineProject } from "vitest/config"

export default defineProject({
  test: { name: "delivery", include: ["test/**/*.test.ts"], testTimeout: 30_000 }
})
