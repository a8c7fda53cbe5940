/**
 * The server's and the worker's entry points import @intake/node/gc-tuning before any other
 * module, so V8's pretenuring is off before anything allocates (docs/choices.md, Performance
 * at the edge): imported later, sites judged long-lived during start-up would stay so.
 */
import { readFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, inject, it } from "vitest"

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

describe("the built server (what pnpm start runs)", () => {
  /** A built module's text with that of every module of the build it imports, and the other imports. */
  const withItsImports = async (
    file: string,
    seen = new Set<string>()
  ): Promise<{ text: string; outside: Array<string> }> => {
    if (seen.has(file)) return { text: "", outside: [] }
    seen.add(file)
    let text = await readFile(file, "utf8")
    const outside: Array<string> = []
    for (const [, specifier] of text.matchAll(/^import\s[^\n]*?"([^"]+)"/gm)) {
      if (!specifier!.startsWith(".")) {
        outside.push(specifier!)
        continue
      }
      const imported = await withItsImports(join(dirname(file), specifier!), seen)
      text += imported.text
      outside.push(...imported.outside)
    }
    return { text, outside }
  }

  it("sets the flag before the server's modules load: gc-tuning first, needing nothing but Node", async () => {
    const entry = inject("serverEntry")
    expect(await firstImport(pathToFileURL(entry))).toBe('import "./gc-tuning.js"')
    const tuning = await withItsImports(join(dirname(entry), "gc-tuning.js"))
    expect(tuning.text).toContain('setFlagsFromString("--no-allocation-site-pretenuring")')
    expect(tuning.outside).toEqual(["node:v8"])
  })
})
