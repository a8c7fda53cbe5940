/**
 * The built-in summary of a submission: the bot's field labels and values in schema
 * order ("Name: Ada Lovelace; Email: ada@example.com"), empty values skipped, plain
 * text on one line, at most 280 characters. Deterministic, so a replay or a test can
 * predict it.
 */

import { cutText } from "../shared/cut-text.js"
import { ownValue } from "../shared/field-values.js"
import type { SchemaField } from "../shared/models.js"

export const MAX_SUMMARY_LENGTH = 280

const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim()

const render = (value: unknown): string | null => {
  if (value === undefined || value === null) return null
  if (typeof value === "boolean") return value ? "Yes" : "No"
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : null
  if (typeof value === "string") return oneLine(value) || null
  if (Array.isArray(value)) {
    const items = value.map(render).filter((item): item is string => item !== null)
    return items.length > 0 ? items.join(", ") : null
  }
  return null
}

/** `text` cut to at most `max` characters (280 by default) at a word, ending in an ellipsis (cut-text.ts). */
export const truncate = (text: string, max = MAX_SUMMARY_LENGTH): string => cutText(text, max)

/** The bot's fields that have a value, in schema order: one-line label and rendered value. */
export const labelledValues = (
  schema: ReadonlyArray<SchemaField>,
  data: Readonly<Record<string, unknown>>
): ReadonlyArray<{ readonly label: string; readonly value: string }> =>
  schema.flatMap((field) => {
    const value = render(ownValue(data, field.name))
    return value === null ? [] : [{ label: oneLine(field.label), value }]
  })

export const summarize = (
  schema: ReadonlyArray<SchemaField>,
  data: Readonly<Record<string, unknown>>
): string =>
  truncate(
    labelledValues(schema, data)
      .map(({ label, value }) => `${label}: ${value}`)
      .join("; ")
  )
