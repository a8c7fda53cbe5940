/**
 * A submission's `data` against its bot's schema (docs/rules.md, Resources and states). Pure: answers
 * the normalized data or one ValidationFailed (400) naming every problem, each at
 * "data.<field>". Required fields are enforced only for COMPLETED submissions, so that a
 * conversation still in progress can store what it has so far.
 */
import { Either } from "effect"
import { invalid, type ValidationFailed, type ValidationIssue } from "./errors.js"
import type { FieldValue, SchemaField, SubmissionStatus } from "./models.js"

export const MAX_TEXT_LENGTH = 10_000
export const MAX_LONG_TEXT_LENGTH = 100_000
export const MAX_EMAIL_LENGTH = 254
export const MAX_URL_LENGTH = 2_048
const MAX_PHONE_LENGTH = 32

export type SubmissionData = Readonly<Record<string, FieldValue>>

const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Characters as a reader counts them (code points), not UTF-16 units. */
const characterCount = (text: string): number => {
  let count = 0
  for (const _ of text) count++
  return count
}

// One @, a dot in the domain, no spaces, no empty labels.
const EMAIL = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/
const PHONE = /^\+?[0-9 ()-]+$/
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

export const isEmail = (value: string): boolean => value.length <= MAX_EMAIL_LENGTH && EMAIL.test(value)

export const isPhone = (value: string): boolean => {
  if (value.length > MAX_PHONE_LENGTH || !PHONE.test(value)) return false
  const digits = value.replace(/[^0-9]/g, "").length
  return digits >= 7 && digits <= 15
}

export const isHttpUrl = (value: string): boolean => {
  if (value.length > MAX_URL_LENGTH || /\s/.test(value)) return false
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname.length > 0
  } catch {
    return false
  }
}

const daysInMonth = (year: number, month: number): number =>
  month === 2
    ? year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
      ? 29
      : 28
    : [4, 6, 9, 11].includes(month)
      ? 30
      : 31

/** YYYY-MM-DD naming a day that exists (no 2026-02-30). */
export const isCalendarDate = (value: string): boolean => {
  const match = DATE.exec(value)
  if (match === null) return false
  const year = Number(match[1])
  const month = Number(match[2])
  const day = Number(match[3])
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month)
}

/** The value stored under `name`, ignoring what objects inherit (a field may be called "constructor"). */
export const ownValue = (data: Readonly<Record<string, unknown>>, name: string): unknown =>
  Object.hasOwn(data, name) ? data[name] : undefined

/** True for what a required field may not be: absent, null, "" or []. */
export const isEmptyValue = (value: unknown): boolean =>
  value === undefined || value === null || value === "" || (Array.isArray(value) && value.length === 0)

/** The problem with a present, non-null value of this field, or null when it is acceptable. */
const problemWith = (field: SchemaField, value: unknown): string | null => {
  switch (field.type) {
    case "text":
    case "long_text": {
      if (typeof value !== "string") return "must be a string"
      const max = field.type === "text" ? MAX_TEXT_LENGTH : MAX_LONG_TEXT_LENGTH
      return characterCount(value) > max ? `must be at most ${max} characters` : null
    }
    case "email":
      if (typeof value !== "string") return "must be a string"
      return isEmail(value) ? null : "must be an email address"
    case "phone":
      if (typeof value !== "string") return "must be a string"
      return isPhone(value) ? null : "must be a phone number (7 to 15 digits, optional +)"
    case "url":
      if (typeof value !== "string") return "must be a string"
      return isHttpUrl(value) ? null : "must be an absolute http or https URL"
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : "must be a number"
    case "boolean":
      return typeof value === "boolean" ? null : "must be true or false"
    case "date":
      if (typeof value !== "string") return "must be a string"
      return isCalendarDate(value) ? null : "must be a calendar date as YYYY-MM-DD"
    case "select": {
      const options = field.options ?? []
      if (typeof value !== "string" || !options.includes(value))
        return `must be one of: ${options.join(", ")}`
      return null
    }
    case "multi_select": {
      const options = field.options ?? []
      if (!Array.isArray(value)) return "must be an array of options"
      const seen = new Set<string>()
      for (const [index, item] of value.entries()) {
        if (typeof item !== "string" || !options.includes(item))
          return `item ${index} must be one of: ${options.join(", ")}`
        if (seen.has(item)) return `item ${index} repeats "${item}"`
        seen.add(item)
      }
      return null
    }
  }
}

/**
 * Validates `data` (as the client sent it) against `schema`. Unknown field names fail
 * with `unknownKeys`; omitted optional fields stay omitted; null stays null.
 */
export const validateData = (
  schema: ReadonlyArray<SchemaField>,
  data: unknown,
  status: SubmissionStatus
): Either.Either<SubmissionData, ValidationFailed> => {
  if (!isPlainObject(data)) return Either.left(invalid([{ path: "data", message: "must be an object" }]))
  const fields = new Map(schema.map((field) => [field.name, field]))
  const unknownKeys = Object.keys(data).filter((key) => !fields.has(key))
  const issues: Array<ValidationIssue> = unknownKeys.map((key) => ({
    path: `data.${key}`,
    message: "is not a field of this intake bot"
  }))
  const normalized: Array<[string, FieldValue]> = []
  for (const field of schema) {
    const present = Object.hasOwn(data, field.name)
    const value = present ? data[field.name] : undefined
    if (field.required === true && status === "COMPLETED" && isEmptyValue(value)) {
      issues.push({ path: `data.${field.name}`, message: "is required" })
      continue
    }
    if (!present) continue
    if (value === null) {
      normalized.push([field.name, null])
      continue
    }
    const problem = problemWith(field, value)
    if (problem === null) normalized.push([field.name, value as FieldValue])
    else issues.push({ path: `data.${field.name}`, message: problem })
  }
  if (issues.length > 0) return Either.left(invalid(issues, unknownKeys.length > 0 ? { unknownKeys } : {}))
  return Either.right(Object.fromEntries(normalized))
}
