import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

// What the domain may import is checked with the other boundary rules, in
// .dependency-cruiser.cjs (`pnpm boundaries`); this test checks what an import check cannot see.

const domainSources = join(import.meta.dirname, "../src")

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [join(dir, entry.name)]
        : []
  )

describe("architecture boundaries", () => {
  it("the domain does not read the environment or use Node globals", () => {
    const offending = sourceFiles(domainSources).filter((file) =>
      /\bprocess\.|\bBuffer\b|\brequire\(/.test(readFileSync(file, "utf8"))
    )
    expect(offending).toEqual([])
  })
})
