/**
 * The guides served at /docs/guides beside the API reference (apps/server/src/guides.ts):
 * every guide of docs/guides has its page, linked from /docs; the errors table holds every
 * code of the error catalog; the receivers' files are shown as they are; nothing is loaded
 * from elsewhere. That the receivers work is guides-verify.test.ts.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { expect, layer } from "@effect/vitest"
import { type ErrorCode, errorCatalog } from "@intake/domain"
import { Effect } from "effect"
import { GUIDES } from "../src/guides.js"
import { BaseUrl, call } from "./harness.js"
import { expectError, realServer } from "./support.js"

const guidesDir = join(import.meta.dirname, "..", "..", "..", "docs", "guides")

const escapeHtml = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;")

/** The page at `path` as HTML, checked to be one of the docs' pages. */
const htmlPage = (baseUrl: string, path: string) =>
  Effect.gen(function* () {
    const answer = yield* call(baseUrl, "GET", path)
    expect(answer.status, path).toBe(200)
    expect(answer.headers.get("content-type")).toBe("text/html; charset=utf-8")
    return answer.body as string
  })

/** The links of a page that stay on this server (paths). */
const localLinks = (html: string) =>
  [...html.matchAll(/href="([^"]*)"/g)].map((match) => match[1]!).filter((href) => !/^[a-z]+:/i.test(href))

layer(realServer({ admin: false }), { excludeTestServices: true })("the guides at /docs/guides", (it) => {
  it.effect("the reference page links every guide, and every guide of docs/guides has its page", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const reference = yield* htmlPage(baseUrl, "/docs")
      expect(reference).toContain('data-url="/openapi.json"')
      const linked = localLinks(reference)
      expect(linked).toContain("/docs/guides")
      for (const { slug } of GUIDES) expect(linked).toContain(`/docs/guides/${slug}`)
      // No markdown file in docs/guides is left without its page.
      const files = readdirSync(guidesDir).filter((name) => name.endsWith(".md") && name !== "README.md")
      expect(files.map((name) => name.replace(/\.md$/, "")).sort()).toEqual(
        GUIDES.map(({ slug }) => slug).sort()
      )
      const index = yield* htmlPage(baseUrl, "/docs/guides")
      for (const { slug } of GUIDES) expect(localLinks(index)).toContain(`/docs/guides/${slug}`)
    })
  )

  it.effect("each page loads nothing, runs nothing, and each of its links answers", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const paths = ["/docs/guides", ...GUIDES.map(({ slug }) => `/docs/guides/${slug}`)]
      const linked = new Set<string>()
      for (const path of paths) {
        const answer = yield* call(baseUrl, "GET", path)
        expect(answer.status, path).toBe(200)
        expect(answer.headers.get("content-security-policy")).toMatch(
          /^default-src 'none'; style-src 'unsafe-inline'/
        )
        const html = answer.body as string
        expect(html, path).toMatch(/<title>[^<]+ · Intake API v1<\/title>/)
        expect(html, path).not.toMatch(/<script|<link|<img|<iframe|\ssrc=/i)
        // A comment line of the markdown left unfilled would show as text.
        expect(html, path).not.toContain("&lt;!--")
        for (const href of localLinks(html)) linked.add(href)
      }
      for (const href of linked) {
        const [path, fragment] = href.split("#")
        const target = yield* call(baseUrl, "GET", path!)
        expect(target.status, href).toBe(200)
        if (fragment !== undefined) expect(target.body as string, href).toContain(`id="${fragment}"`)
      }
      expect(linked.size).toBeGreaterThan(paths.length)
    })
  )

  it.effect("the errors table has a row for every code of the error catalog: status, when, what to do", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const html = yield* htmlPage(baseUrl, "/docs/guides/errors")
      const rows = [...html.matchAll(/<tr>\s*<td><code>([a-z_]+)<\/code><\/td>([\s\S]*?)<\/tr>/g)]
      const codes = Object.keys(errorCatalog) as Array<ErrorCode>
      expect(rows.map((row) => row[1])).toEqual(codes)
      for (const [, code, cells] of rows) {
        const entry = errorCatalog[code as ErrorCode]
        const status =
          "alternateStatus" in entry ? `${entry.status} or ${entry.alternateStatus}` : `${entry.status}`
        expect(cells, code).toContain(`<td>${status}</td>`)
        // The catalog's words, their code spans rendered.
        const plain = (text: string) => text.replace(/<\/?code>/g, "").replaceAll("`", "")
        expect(plain(cells!), code).toContain(plain(escapeHtml(entry.description)))
        expect(plain(cells!), code).toContain(plain(escapeHtml(entry.remedy)))
      }
      expect(rows.find((row) => row[1] === "validation_failed")?.[2]).toContain("<code>issues</code>")
      expect(rows.find((row) => row[1] === "validation_failed")?.[2]).toContain("<code>unknown_keys?</code>")
    })
  )

  it.effect("the verify guide shows each receiver's file as it is, every file of docs/guides/verify", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const html = yield* htmlPage(baseUrl, "/docs/guides/verify-webhooks")
      const files = readdirSync(join(guidesDir, "verify"))
      expect(files.length).toBeGreaterThanOrEqual(10)
      for (const file of files) {
        const text = readFileSync(join(guidesDir, "verify", file), "utf8").replace(/\n$/, "")
        expect(html, file).toContain(`<code>docs/guides/verify/${file}</code>`)
        expect(html, file).toContain(`${escapeHtml(text)}\n</code></pre>`)
      }
    })
  )

  it.effect("a guide that does not exist is 404 route", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      for (const path of ["/docs/guides/nowhere", "/docs/guides/errors.md", "/docs/guides/../package.json"]) {
        expect(expectError(yield* call(baseUrl, "GET", path), 404, "resource_not_found"), path).toEqual({
          resource: "route"
        })
      }
    })
  )
})
