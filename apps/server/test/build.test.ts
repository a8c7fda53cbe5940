/**
 * The server as `pnpm start` builds it (build.mjs; built once per test project by
 * global-setup.ts): what its modules import, read from the build itself.
 */
import { readFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { V8_FLAGS } from "@intake/node/gc-tuning"
import { describe, expect, inject, it } from "vitest"

/** A built module's text with that of every module of the build it imports statically, and its other imports. */
const withItsImports = async (
  file: string,
  seen = new Set<string>()
): Promise<{ text: string; outside: Array<string> }> => {
  if (seen.has(file)) return { text: "", outside: [] }
  seen.add(file)
  let text = await readFile(file, "utf8")
  const outside: Array<string> = []
  for (const [, specifier] of text.matchAll(/^import\s[^;]*?"([^"]+)";?$/gm)) {
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

describe("the built server (what pnpm start runs)", () => {
  it("sets V8's flags before the server's modules load: gc-tuning first, needing nothing but Node", async () => {
    const entry = inject("serverEntry")
    const text = await readFile(entry, "utf8")
    expect(text.match(/^import\s[^\n]*$/m)?.[0]).toBe('import "./gc-tuning.js"')
    const tuning = await withItsImports(join(dirname(entry), "gc-tuning.js"))
    for (const flag of V8_FLAGS) expect(tuning.text).toContain(JSON.stringify(flag))
    expect(tuning.text).toContain("setFlagsFromString(")
    expect(tuning.outside).toEqual(["node:v8"])
  })

  it("turns source maps on before the server's modules load, so stack traces name the TypeScript sources", async () => {
    const entry = inject("serverEntry")
    const imports = [...(await readFile(entry, "utf8")).matchAll(/^import "([^"]+)"$/gm)].map(
      (match) => match[1]
    )
    expect(imports.indexOf("./source-maps.js")).toBeLessThan(imports.indexOf("./server.js"))
    expect(imports.indexOf("./source-maps.js")).toBeGreaterThan(-1)
    expect(await readFile(join(dirname(entry), "source-maps.js"), "utf8")).toContain(
      "process.setSourceMapsEnabled(true)"
    )
  })

  it("loads the model summarizer only when asked for: @effect/ai-openai is imported on demand, not at start", async () => {
    const entry = inject("serverEntry")
    const atStart = await withItsImports(entry)
    expect(atStart.outside.some((specifier) => specifier.includes("/effect/dist/"))).toBe(true)
    expect(atStart.outside.filter((specifier) => /ai-openai|gpt-tokenizer/.test(specifier))).toEqual([])
    // The summarizer is in the build, as a chunk imported on demand.
    expect(atStart.text).toMatch(/import\("\.\/chunks\/model-summarizer-[^"]+\.js"\)/)
  })

  it("loads the OTLP exporter only when traces are asked for: @effect/opentelemetry is imported on demand, not at start", async () => {
    const atStart = await withItsImports(inject("serverEntry"))
    expect(atStart.outside.filter((specifier) => /opentelemetry/.test(specifier))).toEqual([])
    // The exporter is in the build, as a chunk imported on demand (docs/operations.md, Traces).
    expect(atStart.text).toMatch(/import\("\.\/chunks\/tracing-[^"]+\.js"\)/)
  })
})
