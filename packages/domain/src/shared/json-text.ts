/**
 * What a parsed JSON request body may hold before anything reads it (docs/choices.md,
 * "Request bodies"): at most MAX_JSON_DEPTH levels of nesting, and no text (value or
 * key) that a store cannot keep or a reader cannot read back: the NUL character (0x00,
 * which PostgreSQL refuses in text) and lone UTF-16 surrogates (not Unicode text). A key
 * named `__proto__` is refused too: JavaScript objects drop it silently on the way to a
 * record, so it would be accepted and lost.
 */
import type { ValidationIssue } from "./errors.js"

/** Deeper bodies are refused whole: no request of the contract nests past a handful of levels. */
export const MAX_JSON_DEPTH = 64

const NUL = "\u0000"
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Why `text` cannot be stored as text, or undefined when it can. */
export const textProblem = (text: string): string | undefined => {
  if (text.includes(NUL)) return "must not contain the NUL character (\\u0000)"
  if (LONE_SURROGATE.test(text)) return "must be valid Unicode text (it holds a lone surrogate)"
  return undefined
}

const pathOf = (parent: string, key: string | number) => (parent === "" ? String(key) : `${parent}.${key}`)

export interface JsonBodyIssues {
  readonly issues: ReadonlyArray<ValidationIssue>
  /** The refused key names (`__proto__`), as `details.unknown_keys` lists them. */
  readonly unknownKeys: ReadonlyArray<string>
}

/**
 * The issues of a parsed body against the rules above, every one found (callers list a
 * bounded number, see `invalid`). One issue at "" when it nests too deep, and nothing else:
 * such a body is not walked further.
 */
export const jsonBodyIssues = (body: unknown): JsonBodyIssues => {
  const issues: Array<ValidationIssue> = []
  const unknownKeys: Array<string> = []
  // An explicit stack: the walk itself must not recurse on hostile input.
  // A refused key waits on the stack as its issue, so that issues come in document order.
  const stack: Array<
    { readonly value: unknown; readonly path: string; readonly depth: number } | ValidationIssue
  > = [{ value: body, path: "", depth: 0 }]
  while (stack.length > 0) {
    const next = stack.pop()!
    if ("message" in next) {
      issues.push(next)
      continue
    }
    const { value, path, depth } = next
    if (typeof value === "string") {
      const problem = textProblem(value)
      if (problem !== undefined) issues.push({ path, message: problem })
      continue
    }
    if (typeof value !== "object" || value === null) continue
    if (depth >= MAX_JSON_DEPTH)
      return {
        issues: [{ path: "", message: `the body nests deeper than ${MAX_JSON_DEPTH} levels` }],
        unknownKeys: []
      }
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], path: pathOf(path, i), depth: depth + 1 })
      continue
    }
    const record = value as Record<string, unknown>
    const keys = Object.keys(record)
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!
      const keyProblem = key === "__proto__" ? "is not a field of this request" : textProblem(key)
      if (key === "__proto__") unknownKeys.push(key)
      if (keyProblem !== undefined) stack.push({ path: pathOf(path, key), message: keyProblem })
      else stack.push({ value: record[key], path: pathOf(path, key), depth: depth + 1 })
    }
  }
  return { issues, unknownKeys }
}
