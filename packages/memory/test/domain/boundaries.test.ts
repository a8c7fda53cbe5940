import { readdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { describe, expect, it } from "vitest"

// What the domain may import is checked with the other boundary rules, in
// .dependency-cruiser.cjs (`pnpm boundaries`); this test checks what an import check cannot see.

// The folder of the domain's entry point (packages/domain/src), found as an import of it is.
const domainSources = dirname(createRequire(import.meta.url).resolve("@intake/domain"))

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
