/** Reading an answer: the envelope of docs/rules.md (success, data or error) and Retry-After. */
import type { ApiError } from "./types.js"

/** Retry-After in seconds (a number of seconds, or an HTTP date). */
export const retryAfterSeconds = (value: string | null, now: number): number | undefined => {
  if (value === null) return undefined
  if (/^[0-9]+$/.test(value.trim())) return Number(value.trim())
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}

const isApiError = (value: unknown): value is ApiError =>
  typeof value === "object" &&
  value !== null &&
  "code" in value &&
  typeof value.code === "string" &&
  "message" in value &&
  typeof value.message === "string"

export const parseEnvelope = (
  text: string
):
  | { readonly success: true; readonly data: unknown }
  | { readonly success: false; readonly error: ApiError }
  | undefined => {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof body !== "object" || body === null || !("success" in body)) return undefined
  if (body.success === true && "data" in body) return { success: true, data: body.data }
  if (body.success === false && "error" in body && isApiError(body.error))
    return { success: false, error: body.error }
  return undefined
}
