/**
 * The server's and the worker's entry points import @intake/node/gc-tuning before any other
 * module, so V8's pretenuring is off before anything allocates (docs/choices.md, Performance
 * at the edge): imported later, sites judged long-lived during start-up would stay so. The
 * built server keeps that order: build.test.ts.
 */
import { readFile } from "node:fs/promises"
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
