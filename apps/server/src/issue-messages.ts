/**
 * The wording of validation issues (docs/choices.md, HTTP): one issue per path, and the
 * same "must be one of ..." style wherever a value has a fixed set of allowed values.
 * Pure: routes.ts decodes, these functions only word what decoding found.
 */
import { echoedName } from "@intake/domain"

export interface Issue {
  readonly path: string
  readonly message: string
}

/** What Effect's formatter says when a value is not one literal: `Expected "A", actual "B"`. */
const EXPECTED_LITERAL = /^Expected ("(?:[^"\\]|\\.)*"|-?[0-9][0-9.e+-]*|true|false|null), actual /

/**
 * One issue per path. A union of literals fails once per member; those failures become one
 * message naming every allowed value; any other path keeps its first message.
 */
export const oneIssuePerPath = (issues: ReadonlyArray<Issue>): ReadonlyArray<Issue> => {
  const byPath = new Map<string, Array<string>>()
  for (const { path, message } of issues) byPath.set(path, [...(byPath.get(path) ?? []), message])
  return [...byPath].map(([path, messages]) => {
    const literals = messages.map((message) => EXPECTED_LITERAL.exec(message)?.[1])
    const allLiterals = messages.length > 1 && literals.every((literal) => literal !== undefined)
    return {
      path,
      message: allLiterals ? `must be one of ${[...new Set(literals)].join(", ")}` : messages[0]!
    }
  })
}

/**
 * The issue for a top-level key the body's schema does not know. When the body has no
 * `data` but the request expects one (a submission), the key is most likely a field value
 * sent at the top level: the message says where it goes.
 */
export const unknownKeyIssue = (key: string, known: ReadonlySet<string>, body: object): Issue => ({
  path: key,
  message:
    known.has("data") && !("data" in body)
      ? `is not a field of this request; field values go under "data", as in {"data":{"${echoedName(key)}":...}}`
      : "is not a field of this request"
})
