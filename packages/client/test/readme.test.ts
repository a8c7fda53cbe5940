/** The package's README documents every name the package exports, types included. */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { expect, it } from "vitest"
import * as client from "../src/index.js"

const source = (file: string) => readFileSync(join(import.meta.dirname, "..", file), "utf8")

it("names every export of the package in its README", () => {
  const readme = source("README.md")
  // index.ts names each export but the wire types, which it re-exports whole from types.ts.
  const named = [...source("src/index.ts").matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((match) =>
    match[1]!.split(",").map((name) => name.replace(/^\s*type\s+/, "").trim())
  )
  const wireTypes = [...source("src/types.ts").matchAll(/^export (?:type|interface) (\w+)/gm)].map(
    (match) => match[1]!
  )
  const exported = [...new Set([...Object.keys(client), ...named, ...wireTypes])]
  expect(exported.length).toBeGreaterThan(60)
  expect(exported.filter((name) => !readme.includes(`\`${name}`))).toEqual([])
})
