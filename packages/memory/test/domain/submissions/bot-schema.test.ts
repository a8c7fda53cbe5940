import { describe, expect, it } from "@effect/vitest"
import { BotSchema, type SchemaField, type ValidationFailed } from "@intake/domain/internal"
import { everyFieldTypeSchema } from "@intake/testing"
import { Either } from "effect"

const issuesOf = (input: unknown) => {
  const result = BotSchema.validateSchema(input)
  if (Either.isRight(result)) throw new Error("expected the schema to be refused")
  return (result.left as ValidationFailed).issues
}
const pathsOf = (input: unknown) => issuesOf(input).map((issue) => issue.path)

describe("bot schema definitions", () => {
  it("accepts a schema with every field type", () => {
    expect(BotSchema.validateSchema(everyFieldTypeSchema())).toEqual(Either.right(everyFieldTypeSchema()))
  })

  it("accepts names of one to 64 characters of lowercase letters, digits and underscores", () => {
    for (const name of ["a", "first_name", "q2", `a${"b".repeat(63)}`])
      expect(Either.isRight(BotSchema.validateSchema([{ name, label: "L", type: "text" }]))).toBe(true)
  })

  it("refuses bad field names at schema.N.name", () => {
    for (const name of ["", "Name", "1st", "_x", "first-name", "née", `a${"b".repeat(64)}`, 7])
      expect(pathsOf([{ name, label: "L", type: "text" }])).toEqual(["schema.0.name"])
  })

  it("refuses a repeated name at the second field", () => {
    expect(
      pathsOf([
        { name: "email", label: "Email", type: "email" },
        { name: "email", label: "Email again", type: "text" }
      ])
    ).toEqual(["schema.1.name"])
  })

  it("refuses an empty or blank label and an unknown type", () => {
    expect(pathsOf([{ name: "a", label: " ", type: "text" }])).toEqual(["schema.0.label"])
    expect(pathsOf([{ name: "a", type: "text" }])).toEqual(["schema.0.label"])
    expect(pathsOf([{ name: "a", label: "A", type: "signature" }])).toEqual(["schema.0.type"])
  })

  it("requires options exactly for select and multi_select", () => {
    expect(pathsOf([{ name: "a", label: "A", type: "select" }])).toEqual(["schema.0.options"])
    expect(pathsOf([{ name: "a", label: "A", type: "multi_select", options: [] }])).toEqual([
      "schema.0.options"
    ])
    expect(pathsOf([{ name: "a", label: "A", type: "select", options: ["x", "x"] }])).toEqual([
      "schema.0.options.1"
    ])
    expect(pathsOf([{ name: "a", label: "A", type: "select", options: ["x", 2, ""] }])).toEqual([
      "schema.0.options.1",
      "schema.0.options.2"
    ])
    expect(pathsOf([{ name: "a", label: "A", type: "text", options: ["x"] }])).toEqual(["schema.0.options"])
  })

  it("refuses a non-boolean required and properties a field does not have", () => {
    expect(pathsOf([{ name: "a", label: "A", type: "text", required: "yes" }])).toEqual(["schema.0.required"])
    expect(pathsOf([{ name: "a", label: "A", type: "text", placeholder: "x" }])).toEqual([
      "schema.0.placeholder"
    ])
  })

  it("refuses a schema that is not an array of objects", () => {
    expect(pathsOf({ name: "a" })).toEqual(["schema"])
    expect(pathsOf(["a"])).toEqual(["schema.0"])
  })

  it("names every problem of every field", () => {
    expect(
      pathsOf([
        { name: "Bad", label: "", type: "text" },
        { name: "ok", label: "Ok", type: "select" }
      ])
    ).toEqual(["schema.0.name", "schema.0.label", "schema.1.options"])
  })

  describe("schemaChanged", () => {
    const base = everyFieldTypeSchema()
    const edit = (i: number, change: Partial<SchemaField>): Array<SchemaField> =>
      base.map((field, j) => (j === i ? { ...field, ...change } : field))

    it("is false for the same schema, and for required omitted versus false", () => {
      expect(BotSchema.schemaChanged(base, everyFieldTypeSchema())).toBe(false)
      const omitted = base.map(({ required: _, ...field }) => field)
      const explicitFalse = base.map((field) => ({ ...field, required: field.required ?? false }))
      expect(BotSchema.schemaChanged(omitted.slice(2), explicitFalse.slice(2))).toBe(false)
    })

    it("is true for any change a submission or its reader can notice", () => {
      expect(BotSchema.schemaChanged(base, edit(0, { label: "Full name" }))).toBe(true)
      expect(BotSchema.schemaChanged(base, edit(0, { required: false }))).toBe(true)
      expect(BotSchema.schemaChanged(base, edit(0, { type: "long_text" }))).toBe(true)
      expect(BotSchema.schemaChanged(base, edit(7, { options: ["starter", "growth"] }))).toBe(true)
      expect(BotSchema.schemaChanged(base, base.slice(1))).toBe(true)
      expect(BotSchema.schemaChanged(base, [...base].reverse())).toBe(true)
      expect(BotSchema.schemaChanged(base, [...base, { name: "extra", label: "Extra", type: "text" }])).toBe(
        true
      )
    })
  })
})
