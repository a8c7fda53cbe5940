import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../../..")

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? entry.name === "node_modules"
        ? []
        : sourceFiles(join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [join(dir, entry.name)]
        : []
  )

const importsOf = (file: string): string[] =>
  [...readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!)

describe("architecture boundaries", () => {
  it("packages/domain imports only effect and its own files", () => {
    const foreign = sourceFiles(join(root, "packages/domain")).flatMap((file) =>
      importsOf(file)
        .filter((spec) => !(spec === "effect" || spec.startsWith("effect/") || spec.startsWith(".")))
        .map((spec) => `${file.slice(root.length + 1)} imports ${spec}`)
    )
    expect(foreign).toEqual([])
  })

  it("the domain does not read the environment or use Node globals", () => {
    const offending = sourceFiles(join(root, "packages/domain")).filter((file) =>
      /\bprocess\.|\bBuffer\b|\brequire\(/.test(readFileSync(file, "utf8"))
    )
    expect(offending).toEqual([])
  })
})
