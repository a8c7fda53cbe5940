/**
 * The server's and the worker's entry points import @intake/node/gc-tuning before any other
 * module, so V8's collector is tuned before anything allocates (docs/performance.md, Memory and
 * garbage collection): imported later, sites judged long-lived during start-up would stay so. The
 * built server keeps that order: build.test.ts.
 */
import { spawnSync } from "node:child_process"
import { readFile } from "node:fs/promises"
import { V8_FLAGS } from "@intake/node/gc-tuning"
import { describe, expect, it } from "vitest"

const firstImport = async (entry: URL) => {
  const text = await readFile(entry, "utf8")
  return text.match(/^import\s[^\n]*$/m)?.[0]
}

describe("the entry points", () => {
  it.each([
    ["server", new URL("../src/main.ts", import.meta.url)],
    ["worker", new URL("../../worker/src/main.ts", import.meta.url)]
  ])("the %s imports gc-tuning first", async (_name, entry) => {
    expect(await firstImport(entry)).toBe('import "@intake/node/gc-tuning"')
  })
})

describe("gc-tuning's V8 flags", () => {
  // V8 skips a flag it does not know (a line on stderr, no error): a Node release that
  // dropped one would run untuned.
  it("are all known to this Node's V8", () => {
    const v8Options = spawnSync(process.execPath, ["--v8-options"], { encoding: "utf8" }).stdout
    const known = (flag: string) => {
      const name = flag.replace(/^--(no-)?/, "").split("=")[0]
      return v8Options.includes(`--${name} (`)
    }
    expect(known("--no-such-intake-flag")).toBe(false)
    for (const flag of V8_FLAGS) expect(known(flag), flag).toBe(true)
  })
})
