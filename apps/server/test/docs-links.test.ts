/**
 * The docs hold together: every relative markdown link between the repository's docs
 * (README.md, CHANGELOG.md, docs/, the packages' READMEs) names a file that exists and, with
 * a `#fragment`, a heading of that file; and every code comment that cites a section of a
 * doc ("docs/performance.md, Round trips of a create") names a heading that exists, so a
 * section moved or renamed cannot leave its citations behind.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..", "..", "..")
const skipped = new Set(["node_modules", "dist", ".data", ".git", "packs"])

const filesUnder = (dir: string, keep: (name: string) => boolean): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    if (skipped.has(name)) return []
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path, keep) : keep(name) ? [path] : []
  })

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replaceAll(" ", "-")

const withoutCode = (text: string) => text.replace(/^```[\s\S]*?^```/gm, "")

const headingsOf = (file: string) =>
  [...withoutCode(readFileSync(file, "utf8")).matchAll(/^#{1,6} +(.+?) *$/gm)].map((found) => found[1]!)

const anchorsOf = (file: string) => {
  const seen = new Map<string, number>()
  return headingsOf(file).map((heading) => {
    const base = slug(heading)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    return count === 0 ? base : `${base}-${count}`
  })
}

const docs = [
  join(root, "README.md"),
  join(root, "CHANGELOG.md"),
  ...filesUnder(join(root, "docs"), (name) => name.endsWith(".md")),
  ...readdirSync(join(root, "packages"))
    .map((name) => join(root, "packages", name, "README.md"))
    .filter(existsSync)
]

describe("the docs", () => {
  it("link only to files that exist and to headings those files have", () => {
    const broken: Array<string> = []
    for (const doc of docs) {
      for (const [, target] of withoutCode(readFileSync(doc, "utf8")).matchAll(/\]\(([^)\s]+)\)/g)) {
        // Other sites, and the server's own pages (the guides link to `/docs`).
        if (/^[a-z]+:/.test(target!) || target!.startsWith("/")) continue
        const [path, fragment] = target!.split("#") as [string, string | undefined]
        const file = path === "" ? doc : join(dirname(doc), decodeURIComponent(path))
        const where = `${relative(root, doc)} -> ${target}`
        if (!existsSync(file)) broken.push(`${where}: no such file`)
        else if (fragment !== undefined && file.endsWith(".md") && !anchorsOf(file).includes(fragment))
          broken.push(`${where}: no such heading`)
      }
    }
    expect(broken).toEqual([])
  })

  it("are cited by code comments under section names they have", () => {
    const sources = ["apps", "packages", "bench", "examples"].flatMap((dir) =>
      filesUnder(join(root, dir), (name) => /\.(ts|mjs|cjs|sh)$/.test(name))
    )
    const stale: Array<string> = []
    for (const source of [...sources, join(root, ".dependency-cruiser.cjs")]) {
      // Comments wrap: join the lines, dropping the comment markers that start them.
      const text = readFileSync(source, "utf8").replace(/\n\s*(\*|\/\/|#)?\s*/g, " ")
      for (const [, doc, quoted, bare] of text.matchAll(
        /docs\/([\w-]+\.md),? (?:"([^"]+)"|([A-Z][^)(:;,."]*))/g
      )) {
        const file = join(root, "docs", doc!)
        const section = (quoted ?? bare!).trim()
        if (!existsSync(file)) {
          stale.push(`${relative(root, source)}: docs/${doc} does not exist`)
          continue
        }
        // "Redis Cluster and Redis faults" names two headings: the first must exist.
        if (!headingsOf(file).some((heading) => section === heading || section.startsWith(`${heading} `)))
          stale.push(`${relative(root, source)}: docs/${doc}, "${section}"`)
      }
    }
    expect(stale).toEqual([])
  })
})
