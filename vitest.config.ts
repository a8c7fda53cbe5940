import { defineConfig } from "vitest/config"
import projects from "./vitest.workspace.js"

export default defineConfig({
  test: {
    projects,
    // Files share their worker's modules (docs/testing.md): a worker is not replaced after
    // each file. Two workers: the process tests mostly wait on real time, so two files at
    // once on two cores (vitest's default there is one).
    isolate: false,
    maxWorkers: 2
  }
})
