/**
 * A canonical JSON text of a parsed JSON value: object keys sorted (by UTF-16 code
 * units) at every depth, no whitespace. Two bodies that differ only in key order or
 * formatting give the same text, which is what request fingerprints need.
 *
 * Values follow JSON.stringify: `undefined` object members are dropped, `undefined`
 * array items and non-finite numbers become `null`. A top-level `undefined` (a request
 * without a body) gives the empty text, so it differs from a body of `null`.
 */
export const canonicalJson = (value: unknown): string => (value === undefined ? "" : render(value))

const render = (value: unknown): string => {
  if (value === null || value === undefined) return "null"
  if (typeof value === "string" || typeof value === "boolean") return JSON.stringify(value)
  if (typeof value === "number") return Number.isFinite(value) ? JSON.stringify(value) : "null"
  if (Array.isArray(value)) return `[${value.map(render).join(",")}]`
  if (typeof value === "object") {
    const record = value as Record<string, unknown>
    const members = Object.keys(record)
      .filter((key) => record[key] !== undefined && typeof record[key] !== "function")
      .sort()
      .map((key) => `${JSON.stringify(key)}:${render(record[key])}`)
    return `{${members.join(",")}}`
  }
  // bigint, symbol, function: not produced by JSON.parse.
  return "null"
}
