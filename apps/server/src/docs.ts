/**
 * GET /docs: the readable docs of /openapi.json (Scalar), under the menu of the guides
 * (guides.ts, /docs/guides). The page loads Scalar's browser bundle from this server, not
 * from a CDN, so an operator on a closed network sees it too.
 */
import { readFileSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { Effect } from "effect"
import { DOCS_MENU_CSS, docsMenu } from "./guides.js"
import type { Reply } from "./responses.js"

export const SCALAR_SCRIPT_PATH = "/docs/scalar.js"

// The package's exports do not list its browser bundle; it sits beside the entry point's folder.
const scalarDist = Path.dirname(createRequire(import.meta.url).resolve("@scalar/api-reference"))
const scalarBundle = Path.join(scalarDist, "browser", "standalone.js")
const scalarVersion = (
  JSON.parse(readFileSync(Path.join(scalarDist, "..", "package.json"), "utf8")) as { version: string }
).version

// The version in the URL lets browsers keep the script for a year and still fetch a new one after an upgrade.
const scriptUrl = `${SCALAR_SCRIPT_PATH}?v=${encodeURIComponent(scalarVersion)}`

// Nothing that needs Scalar's servers: no web fonts from its font host, no AI agent, no MCP
// generator, no developer toolbar (its Share and Deploy go to Scalar's cloud).
const configuration = JSON.stringify({
  withDefaultFonts: false,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true }
})

const DOCS_HTML = `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>Intake API v1</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <style>body { margin: 0; }${DOCS_MENU_CSS}</style>
  </head>
  <body>
    ${docsMenu("/docs")}
    <script id="api-reference" data-url="/openapi.json" data-configuration='${configuration}'></script>
    <script src="${scriptUrl}"></script>
  </body>
</html>
`

const DOCS_REPLY: Reply = {
  status: 200,
  headers: { "content-type": "text/html; charset=utf-8" },
  body: DOCS_HTML
}

export const docsPage = () => DOCS_REPLY

/**
 * Scalar's bundle (about 4 MB), read on the first request and then served from memory.
 * A bundle that cannot be read is a defect (the server answers 500), not a startup failure.
 */
export const makeScalarScript = () => {
  let bundle: Promise<Uint8Array> | undefined
  return Effect.map(
    Effect.promise(
      () =>
        (bundle ??= readFile(scalarBundle).catch((error: unknown) => {
          bundle = undefined
          throw error
        }))
    ),
    (body): Reply => ({
      status: 200,
      headers: {
        "content-type": "text/javascript; charset=utf-8",
        "cache-control": "public, max-age=31536000, immutable"
      },
      body
    })
  )
}
