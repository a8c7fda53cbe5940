/**
 * An intake bot's field schema as the operator defines it, and when a new definition
 * counts as a schema change (schema_version grows by one).
 */
import { Either } from "effect"
import { invalid, type ValidationFailed, type ValidationIssue } from "../shared/errors.js"
import { type FieldType, FieldType as FieldTypeSchema, type SchemaField } from "../shared/models.js"

export const FIELD_NAME = /^[a-z][a-z0-9_]{0,63}$/
export const MAX_FIELDS = 200
export const MAX_LABEL_LENGTH = 200
export const MAX_OPTIONS = 500
export const MAX_OPTION_LENGTH = 200

const fieldTypes: ReadonlyArray<string> = FieldTypeSchema.literals
const knownKeys = new Set(["name", "label", "type", "required", "options"])
const hasOptions = (type: FieldType): boolean => type === "select" || type === "multi_select"

const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Validates a schema definition. `path` prefixes the issue paths ("schema" gives
 * "schema.0.name"). Answers the fields in a normalized form: `required` only when given,
 * `options` only for select and multi_select.
 */
export const validateSchema = (
  input: unknown,
  path = "schema"
): Either.Either<ReadonlyArray<SchemaField>, ValidationFailed> => {
  if (!Array.isArray(input)) return Either.left(invalid([{ path, message: "must be an array of fields" }]))
  const issues: Array<ValidationIssue> = []
  if (input.length > MAX_FIELDS) issues.push({ path, message: `must have at most ${MAX_FIELDS} fields` })
  const seen = new Set<string>()
  const fields: Array<SchemaField> = []
  input.forEach((raw: unknown, index) => {
    const at = `${path}.${index}`
    if (!isPlainObject(raw)) {
      issues.push({ path: at, message: "must be an object" })
      return
    }
    const before = issues.length
    for (const key of Object.keys(raw))
      if (!knownKeys.has(key)) issues.push({ path: `${at}.${key}`, message: "is not a property of a field" })
    const { name, label, type, required, options } = raw
    if (typeof name !== "string" || !FIELD_NAME.test(name))
      issues.push({
        path: `${at}.name`,
        message: "must start with a lowercase letter and hold up to 64 lowercase letters, digits or _"
      })
    else if (seen.has(name)) issues.push({ path: `${at}.name`, message: `repeats the field name "${name}"` })
    else seen.add(name)
    if (typeof label !== "string" || label.trim() === "")
      issues.push({ path: `${at}.label`, message: "must be a non-empty string" })
    else if (label.length > MAX_LABEL_LENGTH)
      issues.push({ path: `${at}.label`, message: `must be at most ${MAX_LABEL_LENGTH} characters` })
    const knownType = typeof type === "string" && fieldTypes.includes(type)
    if (!knownType) issues.push({ path: `${at}.type`, message: `must be one of: ${fieldTypes.join(", ")}` })
    if (required !== undefined && typeof required !== "boolean")
      issues.push({ path: `${at}.required`, message: "must be true or false" })
    if (knownType && hasOptions(type as FieldType)) {
      if (!Array.isArray(options) || options.length === 0)
        issues.push({ path: `${at}.options`, message: "must be a non-empty array of strings" })
      else if (options.length > MAX_OPTIONS)
        issues.push({ path: `${at}.options`, message: `must have at most ${MAX_OPTIONS} options` })
      else {
        const distinct = new Set<string>()
        options.forEach((option: unknown, i) => {
          if (typeof option !== "string" || option === "" || option.length > MAX_OPTION_LENGTH)
            issues.push({
              path: `${at}.options.${i}`,
              message: `must be a non-empty string of at most ${MAX_OPTION_LENGTH} characters`
            })
          else if (distinct.has(option))
            issues.push({ path: `${at}.options.${i}`, message: `repeats the option "${option}"` })
          else distinct.add(option)
        })
      }
    } else if (knownType && options !== undefined)
      issues.push({ path: `${at}.options`, message: "are only for select and multi_select fields" })
    if (issues.length === before)
      fields.push({
        name: name as string,
        label: label as string,
        type: type as FieldType,
        ...(required === undefined ? {} : { required: required as boolean }),
        ...(hasOptions(type as FieldType) ? { options: [...(options as ReadonlyArray<string>)] } : {})
      })
  })
  return issues.length > 0 ? Either.left(invalid(issues)) : Either.right(fields)
}

/** A field as far as submissions can tell: an omitted `required` means false. */
const canonical = (field: SchemaField): string =>
  JSON.stringify([field.name, field.label, field.type, field.required === true, field.options ?? null])

/**
 * True when `next` differs from `previous` in anything a submission or its reader can
 * notice: fields added, removed, reordered, renamed, relabelled, retyped, made
 * (not) required, or options changed.
 */
export const schemaChanged = (
  previous: ReadonlyArray<SchemaField>,
  next: ReadonlyArray<SchemaField>
): boolean =>
  previous.length !== next.length || previous.some((field, i) => canonical(field) !== canonical(next[i]!))
