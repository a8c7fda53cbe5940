/**
 * Issue #42: the package's rows are typed by their row interfaces (src/rows.ts), not by
 * casts at each use. Counted on the TypeScript syntax tree, so a cast in a comment or a
 * string does not count and every cast in code does, whatever its spelling.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import ts from "typescript"

const MAX_CASTS = 30
const sourceDir = fileURLToPath(new URL("../src", import.meta.url))

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

const isConstAssertion = (type: ts.TypeNode) =>
  ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName) && type.typeName.text === "const"

/** The `x as T` and `<T>x` expressions of a file, `as const` excepted. */
const castsIn = (path: string): number => {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true)
  let count = 0
  const visit = (node: ts.Node) => {
    if ((ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && !isConstAssertion(node.type))
      count++
    ts.forEachChild(node, visit)
  }
  visit(source)
  return count
}

describe("packages/postgres/src", () => {
  it(`holds at most ${MAX_CASTS} type assertions (\`as\`, \`<T>\`; \`as const\` excepted)`, () => {
    const byFile = Object.fromEntries(
      sourceFiles(sourceDir)
        .map((path) => [relative(sourceDir, path), castsIn(path)] as const)
        .filter(([, count]) => count > 0)
    )
    const total = Object.values(byFile).reduce((sum, count) => sum + count, 0)
    expect(total, `type assertions by file: ${JSON.stringify(byFile)}`).toBeLessThanOrEqual(MAX_CASTS)
  })
})
