/**
 * GET /docs/guides and /docs/guides/<guide>: the guides of docs/guides, served as HTML
 * beside the API reference (/docs). Each is markdown in the repository, rendered by the
 * server on the first request and then served from memory. Two comment lines of the
 * markdown are filled in here, so that what a guide shows cannot drift from what runs:
 *
 *   <!-- include verify/node-http.mjs -->   the file's text, as a code block (the same
 *                                           files the tests run as receivers)
 *   <!-- errors-table -->                   the table of every error code, from the
 *                                           error catalog (packages/domain/src/shared/errors.ts)
 *
 * The pages load nothing: no script, no font, no stylesheet from elsewhere (the styles are
 * inline), so they read the same on a closed network.
 */
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { type ErrorCode, errorCatalog } from "@intake/domain"
import { Effect, Schema, type SchemaAST } from "effect"
import { micromark } from "micromark"
import { gfm, gfmHtml } from "micromark-extension-gfm"
import type { Reply } from "./responses.js"

export const GUIDES_PATH = "/docs/guides"

/** The guides, in the order of the menu: docs/guides/<slug>.md. */
export const GUIDES = [
  { slug: "errors", label: "Errors" },
  { slug: "rate-limits", label: "Rate limits" },
  { slug: "pagination", label: "Pagination" },
  { slug: "idempotency", label: "Idempotency" },
  { slug: "retries", label: "Delivery retries" },
  { slug: "secret-rotation", label: "Secret rotation" },
  { slug: "recovery", label: "Recovery" },
  { slug: "verify-webhooks", label: "Verify a delivery" }
] as const

/**
 * docs/guides: a workspace package (docs/guides/package.json), found as Scalar's bundle is
 * (docs.ts), from the installed packages, wherever the server's build put its code. Looked
 * up with the first guide asked for, so that a server without its guides still starts.
 */
const guidesDirectory = () =>
  Path.dirname(createRequire(import.meta.url).resolve("@intake/guides/package.json"))

/** The menu of every docs page: the reference, the guides' index, and each guide. */
export const docsMenu = (currentPath: string) => {
  const links = [
    { path: "/docs", label: "API reference" },
    { path: GUIDES_PATH, label: "Guides" },
    ...GUIDES.map(({ slug, label }) => ({ path: `${GUIDES_PATH}/${slug}`, label }))
  ]
    .map(({ path, label }) =>
      path === currentPath
        ? `<a href="${path}" aria-current="page">${label}</a>`
        : `<a href="${path}">${label}</a>`
    )
    .join("")
  return `<nav class="intake-menu" aria-label="Intake API v1 documentation"><strong>Intake API v1</strong>${links}</nav>`
}

/** The menu's height: Scalar's reference starts below it (--scalar-custom-header-height). */
const MENU_HEIGHT = "2.75rem"

export const DOCS_MENU_CSS = `
.intake-menu { position: sticky; top: 0; z-index: 100; box-sizing: border-box; height: ${MENU_HEIGHT};
  display: flex; align-items: center; gap: 1.1rem; padding: 0 1rem; overflow-x: auto; white-space: nowrap;
  font: 14px/1 system-ui, sans-serif; background: #1f2430; color: #e8eaf0; }
.intake-menu a { color: #c9d1e6; text-decoration: none; }
.intake-menu a:hover, .intake-menu a[aria-current] { color: #fff; text-decoration: underline; }
:root { --scalar-custom-header-height: ${MENU_HEIGHT}; }
`

const PAGE_CSS = `
body { margin: 0; font: 16px/1.55 system-ui, sans-serif; color: #1d2230; background: #fff; }
main { max-width: 52rem; margin: 0 auto; padding: 1.5rem 1.25rem 4rem; }
h1, h2, h3 { line-height: 1.25; }
h2 { margin-top: 2.2rem; padding-bottom: .3rem; border-bottom: 1px solid #e3e6ee; }
a { color: #2454c5; }
code { font: .9em/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; background: #f2f4f8; padding: .1em .3em;
  border-radius: 3px; }
pre { background: #f5f7fa; border: 1px solid #e3e6ee; border-radius: 6px; padding: .8rem 1rem; overflow-x: auto; }
pre code { background: none; padding: 0; }
table { border-collapse: collapse; display: block; overflow-x: auto; font-size: .92rem; }
th, td { border: 1px solid #dfe3eb; padding: .4rem .6rem; text-align: left; vertical-align: top; }
th { background: #f5f7fa; }
@media (prefers-color-scheme: dark) {
  body { color: #e3e6ee; background: #14171f; }
  a { color: #8fb0ff; }
  code, pre, th { background: #1f2430; }
  pre, th, td, h2 { border-color: #343b4b; }
}
${DOCS_MENU_CSS}`

/** Markdown text: `|` would end a table cell. */
const tableCell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ")

/** The names of a code's `details`, `?` after the optional ones; "none" without details. */
const detailsOf = (code: ErrorCode) => {
  const entry = errorCatalog[code]
  if (!("details" in entry)) return "none"
  const ast = Schema.Struct(entry.details).ast as SchemaAST.TypeLiteral
  return ast.propertySignatures
    .map((property) => `\`${String(property.name)}${property.isOptional ? "?" : ""}\``)
    .join(", ")
}

/** The errors table, one row per code of the catalog, in its order. */
export const errorsTable = () =>
  [
    "| Code | Status | When | `details` | What to do |",
    "| --- | --- | --- | --- | --- |",
    ...(Object.keys(errorCatalog) as Array<ErrorCode>).map((code) => {
      const entry = errorCatalog[code]
      const status =
        "alternateStatus" in entry ? `${entry.status} or ${entry.alternateStatus}` : `${entry.status}`
      return `| \`${code}\` | ${status} | ${tableCell(entry.description)} | ${detailsOf(code)} | ${tableCell(entry.remedy)} |`
    })
  ].join("\n")

const LANGUAGES: Record<string, string> = { ".mjs": "js", ".js": "js", ".py": "python", ".go": "go" }

/** A file of docs/guides as a fenced code block, its path above it. */
const includedFile = async (guidesDir: string, relativePath: string) => {
  const path = Path.resolve(guidesDir, relativePath)
  if (!path.startsWith(`${guidesDir}${Path.sep}`)) throw new Error(`${relativePath} is outside docs/guides`)
  const text = (await readFile(path, "utf8")).replace(/\n$/, "")
  // A fence longer than any run of backticks in the file, so nothing in it closes the block.
  const longestRun = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length))
  const fence = "`".repeat(Math.max(3, longestRun + 1))
  const language = LANGUAGES[Path.extname(path)] ?? ""
  return `File \`docs/guides/${relativePath}\`:\n\n${fence}${language}\n${text}\n${fence}`
}

const INCLUDE = /^<!-- include (\S+) -->$/
const ERRORS_TABLE = "<!-- errors-table -->"

/** The guide's markdown with its comment lines filled in. */
const expand = async (guidesDir: string, markdown: string) => {
  const lines = await Promise.all(
    markdown.split("\n").map(async (line) => {
      const include = INCLUDE.exec(line.trim())
      if (include !== null) return includedFile(guidesDir, include[1]!)
      return line.trim() === ERRORS_TABLE ? errorsTable() : line
    })
  )
  return lines.join("\n")
}

const escapeHtml = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;")

/** `Rate limit headers` to `rate-limit-headers`, for a heading's anchor. */
const anchorOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, "")
    .replace(/&[a-z]+;|&#\d+;/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")

/**
 * Markdown to HTML (CommonMark and GitHub's tables; raw HTML in the markdown is shown as
 * text, not run). Headings get anchors; a link to another guide's file
 * (`idempotency.md#…`) goes to its page.
 */
const render = (markdown: string) =>
  micromark(markdown, { extensions: [gfm()], htmlExtensions: [gfmHtml()] })
    .replace(/<h([23])>(.*?)<\/h\1>/g, (_match, level: string, inner: string) => {
      return `<h${level} id="${anchorOf(inner)}">${inner}</h${level}>`
    })
    .replace(/href="([A-Za-z0-9-]+)\.md(#[^"]*)?"/g, (_match, slug: string, fragment: string | undefined) => {
      return `href="${slug === "README" ? GUIDES_PATH : `${GUIDES_PATH}/${slug}`}${fragment ?? ""}"`
    })

const page = (path: string, title: string, body: string): Reply => ({
  status: 200,
  headers: {
    "content-type": "text/html; charset=utf-8",
    // The page loads nothing and runs nothing: its only style is inline.
    "content-security-policy":
      "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
  },
  body: `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(title)} · Intake API v1</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <style>${PAGE_CSS}</style>
  </head>
  <body>
    ${docsMenu(path)}
    <main>
${body}
    </main>
  </body>
</html>
`
})

/** One guide's page, from docs/guides/<file>; its title is its first heading. */
const guidePage = async (guidesDir: string, path: string, file: string) => {
  const markdown = await readFile(Path.join(guidesDir, file), "utf8")
  const title = /^# (.+)$/m.exec(markdown)?.[1] ?? "Guides"
  return page(path, title, render(await expand(guidesDir, markdown)))
}

/** Every page by its path: the index (docs/guides/README.md) and each guide. */
const renderAll = async () => {
  const guidesDir = guidesDirectory()
  return new Map<string, Reply>(
    await Promise.all([
      guidePage(guidesDir, GUIDES_PATH, "README.md").then((reply) => [GUIDES_PATH, reply] as const),
      ...GUIDES.map(({ slug }) => {
        const path = `${GUIDES_PATH}/${slug}`
        return guidePage(guidesDir, path, `${slug}.md`).then((reply) => [path, reply] as const)
      })
    ])
  )
}

/**
 * The guides' pages, rendered on the first request and then served from memory; undefined
 * for a path that is no page. A guide that cannot be read or rendered is a defect (the
 * server answers 500, and the next request tries again), not a startup failure.
 */
export const makeGuidePages = () => {
  let pages: Promise<Map<string, Reply>> | undefined
  return (path: string) =>
    Effect.map(
      Effect.promise(
        () =>
          (pages ??= renderAll().catch((error: unknown) => {
            pages = undefined
            throw error
          }))
      ),
      (byPath) => byPath.get(path)
    )
}
