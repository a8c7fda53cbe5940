/**
 * A statement as this driver sends it: its text and values (`SqlText`), written with the
 * `statement` template, and the name it is prepared under on a connection.
 */
import { createHash } from "node:crypto"

/** A statement's text, with `$1`, `$2`... for its values, and the values. */
export interface SqlText {
  readonly text: string
  readonly values: ReadonlyArray<unknown>
}

const texts = new WeakMap<TemplateStringsArray, string>()

/** A statement written as a template: each value becomes a parameter (`$1`, `$2`...), never text. */
export const statement = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): SqlText => {
  let text = texts.get(strings)
  if (text === undefined) {
    text = strings.reduce((joined, part, index) => `${joined}$${index}${part}`)
    texts.set(strings, text)
  }
  return { text, values }
}

// One name per statement text: pg prepares it once per connection, then only binds.
const names = new Map<string, string>()
export const nameOf = (text: string) => {
  let name = names.get(text)
  if (name === undefined) {
    name = `intake_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`
    names.set(text, name)
  }
  return name
}

/** The name of PostgreSQL's unnamed statement: it lasts until the session's next Parse. */
export const UNNAMED = ""
export const unnamed = (_text: string) => UNNAMED
