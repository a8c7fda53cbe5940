/**
 * Builds the server once per test project the way `pnpm start` does (build.mjs), into a
 * folder of its own under dist/ (projects set up side by side never write the same files),
 * for the tests that run it as a process (process.ts). Removed when the project ends.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { join } from "node:path"
import type { TestProject } from "vitest/node"

const serverDir = join(import.meta.dirname, "..")

export default function setup(project: TestProject) {
  mkdirSync(join(serverDir, "dist"), { recursive: true })
  const outdir = mkdtempSync(join(serverDir, "dist", "test-"))
  execFileSync(process.execPath, ["build.mjs", outdir], { cwd: serverDir, stdio: "inherit" })
  project.provide("serverEntry", join(outdir, "main.js"))
  return () => rmSync(outdir, { recursive: true, force: true })
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The built server's entry point (dist/…/main.js). */
    serverEntry: string
  }
}
