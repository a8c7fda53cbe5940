import { describe, expect, it } from "@effect/vitest"
import { type FieldType, FieldValues, type SchemaField, type ValidationFailed } from "@intake/domain/internal"
import { everyFieldTypeSchema, validSubmissionData, valuesByType } from "@intake/testing"
import { Either } from "effect"

const fieldOf = (type: FieldType): SchemaField => {
  const field = everyFieldTypeSchema().find((candidate) => candidate.type === type)!
  return { ...field, name: "f", required: false }
}

const failure = (result: Either.Either<unknown, ValidationFailed>): ValidationFailed => {
  if (Either.isRight(result)) throw new Error(`expected a failure, got ${JSON.stringify(result.right)}`)
  return result.left
}

describe("submission data against the bot schema", () => {
  for (const [type, values] of Object.entries(valuesByType) as Array<
    [FieldType, (typeof valuesByType)[FieldType]]
  >) {
    describe(type, () => {
      for (const value of values.valid)
        it(`accepts ${JSON.stringify(value)?.slice(0, 40)}`, () => {
          expect(FieldValues.validateData([fieldOf(type)], { f: value }, "COMPLETED")).toEqual(
            Either.right({ f: value })
          )
        })
      for (const value of values.invalid)
        it(`rejects ${JSON.stringify(value)?.slice(0, 40) ?? String(value)} at data.f`, () => {
          const error = failure(FieldValues.validateData([fieldOf(type)], { f: value }, "COMPLETED"))
          expect(error.status).toBe(400)
          expect(error.issues).toHaveLength(1)
          expect(error.issues[0]!.path).toBe("data.f")
          expect(error.unknownKeys).toBeUndefined()
        })
    })
  }

  it("accepts the full example of every field type unchanged", () => {
    const data = validSubmissionData()
    expect(FieldValues.validateData(everyFieldTypeSchema(), data, "COMPLETED")).toEqual(Either.right(data))
  })

  it("keeps omitted optional fields omitted and null ones null", () => {
    const result = FieldValues.validateData(
      everyFieldTypeSchema(),
      { name: "Ada", email: "ada@example.com", phone: null },
      "COMPLETED"
    )
    expect(result).toEqual(Either.right({ name: "Ada", email: "ada@example.com", phone: null }))
  })

  describe("required fields", () => {
    for (const [label, value] of [
      ["omitted", undefined],
      ["null", null],
      ["an empty string", ""]
    ] as const)
      it(`refuses a required field ${label} in a COMPLETED submission`, () => {
        const data: Record<string, unknown> = { email: "ada@example.com" }
        if (value !== undefined) data.name = value
        const error = failure(FieldValues.validateData(everyFieldTypeSchema(), data, "COMPLETED"))
        expect(error.issues).toEqual([{ path: "data.name", message: "is required" }])
      })

    it("refuses an empty array for a required multi_select", () => {
      const schema: Array<SchemaField> = [
        { name: "topics", label: "Topics", type: "multi_select", options: ["a", "b"], required: true }
      ]
      expect(failure(FieldValues.validateData(schema, { topics: [] }, "COMPLETED")).issues).toEqual([
        { path: "data.topics", message: "is required" }
      ])
      expect(FieldValues.validateData(schema, { topics: ["a"] }, "COMPLETED")).toEqual(
        Either.right({ topics: ["a"] })
      )
    })

    it("names every missing required field at once", () => {
      const error = failure(FieldValues.validateData(everyFieldTypeSchema(), {}, "COMPLETED"))
      expect(error.issues.map((issue) => issue.path)).toEqual(["data.name", "data.email"])
    })

    it("does not enforce required fields while IN_PROGRESS, but still checks the values given", () => {
      expect(FieldValues.validateData(everyFieldTypeSchema(), {}, "IN_PROGRESS")).toEqual(Either.right({}))
      expect(FieldValues.validateData(everyFieldTypeSchema(), { name: null }, "IN_PROGRESS")).toEqual(
        Either.right({ name: null })
      )
      const error = failure(
        FieldValues.validateData(everyFieldTypeSchema(), { email: "nope" }, "IN_PROGRESS")
      )
      expect(error.issues.map((issue) => issue.path)).toEqual(["data.email"])
    })
  })

  describe("unknown field names", () => {
    it("are refused with unknown_keys and an issue each", () => {
      const error = failure(
        FieldValues.validateData(
          everyFieldTypeSchema(),
          validSubmissionData({ shoe_size: 42, Name: "x" }),
          "COMPLETED"
        )
      )
      expect(error.status).toBe(400)
      expect(error.unknownKeys).toEqual(["shoe_size", "Name"])
      expect(error.issues.map((issue) => issue.path)).toEqual(["data.shoe_size", "data.Name"])
      expect(error.details).toMatchObject({ unknown_keys: ["shoe_size", "Name"] })
    })

    it("are reported together with bad values", () => {
      const error = failure(
        FieldValues.validateData(
          everyFieldTypeSchema(),
          validSubmissionData({ extra: 1, team_size: "12" }),
          "COMPLETED"
        )
      )
      expect(error.unknownKeys).toEqual(["extra"])
      expect(error.issues.map((issue) => issue.path).sort()).toEqual(["data.extra", "data.team_size"])
    })

    it("include keys that look like object internals", () => {
      const data = JSON.parse('{"name":"Ada","email":"ada@example.com","__proto__":{"x":1}}')
      expect(
        failure(FieldValues.validateData(everyFieldTypeSchema(), data, "COMPLETED")).unknownKeys
      ).toEqual(["__proto__"])
    })
  })

  it("refuses data that is not an object at path data", () => {
    for (const data of [null, [], "x", 1, undefined])
      expect(failure(FieldValues.validateData(everyFieldTypeSchema(), data, "IN_PROGRESS")).issues).toEqual([
        { path: "data", message: "must be an object" }
      ])
  })

  it("counts text length in characters, not UTF-16 units", () => {
    const field = fieldOf("text")
    expect(Either.isRight(FieldValues.validateData([field], { f: "😀".repeat(10_000) }, "COMPLETED"))).toBe(
      true
    )
    expect(Either.isLeft(FieldValues.validateData([field], { f: "😀".repeat(10_001) }, "COMPLETED"))).toBe(
      true
    )
  })

  it("knows leap years and month lengths", () => {
    expect(FieldValues.isCalendarDate("2028-02-29")).toBe(true)
    expect(FieldValues.isCalendarDate("2100-02-29")).toBe(false)
    expect(FieldValues.isCalendarDate("2026-06-31")).toBe(false)
    expect(FieldValues.isCalendarDate("2026-07-31")).toBe(true)
    expect(FieldValues.isCalendarDate("2026-07-00")).toBe(false)
    expect(FieldValues.isCalendarDate("0000-01-01")).toBe(false)
  })
})
