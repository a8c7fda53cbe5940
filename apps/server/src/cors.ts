/**
 * CORS for /v1 (docs/choices.md, HTTP): off unless INTAKE_CORS_ORIGINS names the origins
 * (a comma list, or `*`). Pure functions deciding the headers; app.ts applies them.
 */

/** `*` for any origin, or the exact origins allowed (`https://docs.example.com`). */
export type CorsOrigins = "*" | ReadonlySet<string>

/** INTAKE_CORS_ORIGINS to origins; an empty value means CORS off. Left: why a value is refused. */
export const parseCorsOrigins = (
  text: string
): { readonly origins: CorsOrigins | undefined } | { readonly error: string } => {
  const entries = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
  if (entries.length === 0) return { origins: undefined }
  if (entries.includes("*")) return entries.length === 1 ? { origins: "*" } : { error: "`*` stands alone" }
  for (const entry of entries) {
    let url: URL
    try {
      url = new URL(entry)
    } catch {
      return { error: `"${entry}" is not an origin (scheme://host[:port])` }
    }
    if (url.origin !== entry) return { error: `"${entry}" is not an origin (scheme://host[:port])` }
  }
  return { origins: new Set(entries) }
}

const ALLOWED_METHODS = "GET, POST, PATCH, DELETE"
// X-Request-Id: a client may name its own request (docs/rules.md, Conventions and envelope).
const ALLOWED_HEADERS = "Authorization, Content-Type, Idempotency-Key, X-Request-Id"
/** What a browser script may read of an answer beyond the safelisted headers. */
const EXPOSED_HEADERS = [
  "X-Request-Id",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "RateLimit-Policy",
  "RateLimit",
  "Retry-After",
  "Idempotent-Replayed"
].join(", ")

const allowOrigin = (origins: CorsOrigins, origin: string | undefined): Record<string, string> => {
  if (origins === "*") return { "access-control-allow-origin": "*" }
  // The answer depends on the Origin header: caches must keep one per origin.
  if (origin === undefined || !origins.has(origin)) return { vary: "Origin" }
  return { "access-control-allow-origin": origin, vary: "Origin" }
}

/** A CORS preflight: an OPTIONS that names the method it wants (answered before authentication). */
export const isPreflight = (method: string, headers: Readonly<Record<string, string | undefined>>) =>
  method === "OPTIONS" && headers["access-control-request-method"] !== undefined

/** The headers of the 204 answering a preflight to /v1. */
export const preflightHeaders = (
  origins: CorsOrigins,
  origin: string | undefined
): Record<string, string> => {
  const allowed = allowOrigin(origins, origin)
  if (allowed["access-control-allow-origin"] === undefined) return allowed
  return {
    ...allowed,
    "access-control-allow-methods": ALLOWED_METHODS,
    "access-control-allow-headers": ALLOWED_HEADERS,
    "access-control-max-age": "600"
  }
}

/** The headers every /v1 answer carries for a cross-origin caller. */
export const responseCorsHeaders = (
  origins: CorsOrigins,
  origin: string | undefined
): Record<string, string> => {
  const allowed = allowOrigin(origins, origin)
  if (allowed["access-control-allow-origin"] === undefined) return allowed
  return { ...allowed, "access-control-expose-headers": EXPOSED_HEADERS }
}
