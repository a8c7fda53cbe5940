/**
 * From the bytes of a request body to the JSON value a route decodes (docs/choices.md,
 * "Request bodies"): the Content-Encoding undone (gzip, its decoded size held to the same
 * 1 MB limit, so a small bomb cannot fill memory; any other encoding is refused), the
 * bytes read as strict UTF-8 (malformed bytes are refused, not replaced by U+FFFD), the
 * text parsed, and the value checked by the domain's rule for bodies (depth, NUL, lone
 * surrogates, `__proto__`). Every refusal is 400 validation_failed.
 */
import { promisify } from "node:util"
import { gunzip } from "node:zlib"
import { invalid, JsonText } from "@intake/domain/internal"
import { Effect } from "effect"

const gunzipBounded = promisify(gunzip)
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })

const refuse = (message: string) => Effect.fail(invalid([{ path: "", message }]))

/** The body's bytes with its Content-Encoding undone, at most `limit` of them. */
const decoded = (bytes: Buffer, contentEncoding: string | undefined, limit: number) => {
  const encoding = (contentEncoding ?? "identity").trim().toLowerCase()
  if (encoding === "identity" || encoding === "") return Effect.succeed(bytes)
  if (encoding !== "gzip" && encoding !== "x-gzip")
    return refuse(`Content-Encoding ${encoding} is not supported (send gzip or none)`)
  return Effect.tryPromise({
    try: () => gunzipBounded(bytes, { maxOutputLength: limit }),
    catch: (error) =>
      (error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE"
        ? invalid([{ path: "", message: `the decoded body is larger than ${limit} bytes` }])
        : invalid([{ path: "", message: "the body is not valid gzip" }])
  })
}

/** The parsed, checked JSON value of a body read whole; `limit` bounds its decoded size. */
export const parseJsonBody = (bytes: Buffer, contentEncoding: string | undefined, limit: number) =>
  Effect.flatMap(decoded(bytes, contentEncoding, limit), (plain) => {
    let value: unknown
    try {
      value = JSON.parse(strictUtf8.decode(plain))
    } catch (error) {
      return refuse(
        error instanceof SyntaxError ? "the body is not valid JSON" : "the body is not valid UTF-8"
      )
    }
    const { issues, unknownKeys } = JsonText.jsonBodyIssues(value)
    if (issues.length === 0) return Effect.succeed(value)
    return Effect.fail(invalid(issues, unknownKeys.length === 0 ? {} : { unknownKeys }))
  })
