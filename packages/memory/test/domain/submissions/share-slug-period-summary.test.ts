import { describe, expect, it } from "@effect/vitest"
import { Period, type SchemaField, ShareSlug, Summary } from "@intake/domain/internal"
import { everyFieldTypeSchema, validSubmissionData } from "@intake/testing"

describe("share slugs", () => {
  it("map usable bytes onto letters and digits", () => {
    expect(ShareSlug.slugFromBytes(Uint8Array.from([0, 1, 25, 26, 51, 52, 61, 62]))).toBe("ABZaz09A")
  })

  it("skip bytes of 248 and above, which would bias the first characters", () => {
    expect(ShareSlug.slugFromBytes(Uint8Array.from([248, 255, 0, 1, 2, 3, 4, 5, 250, 6, 7]))).toBe("ABCDEFGH")
    expect(ShareSlug.slugFromBytes(Uint8Array.from([0, 1, 2, 3, 4, 5, 6, 249]))).toBeNull()
  })

  it("give every character to exactly 4 of the 256 byte values", () => {
    const bytesPerCharacter = new Map<string, number>()
    for (let byte = 0; byte < 256; byte++) {
      const slug = ShareSlug.slugFromBytes(Uint8Array.from({ length: 8 }, () => byte))
      if (slug !== null) bytesPerCharacter.set(slug[0]!, (bytesPerCharacter.get(slug[0]!) ?? 0) + 1)
    }
    expect(bytesPerCharacter.size).toBe(62)
    expect(new Set(bytesPerCharacter.values())).toEqual(new Set([4]))
  })

  it("draw more bytes when a draw has too few usable ones", () => {
    const draws = [Uint8Array.from({ length: 16 }, () => 255), Uint8Array.from({ length: 16 }, (_, i) => i)]
    expect(ShareSlug.generateSlug(() => draws.shift()!)).toBe("ABCDEFGH")
  })

  it("are 8 letters or digits", () => {
    const random = (size: number) => Uint8Array.from({ length: size }, () => Math.floor(Math.random() * 256))
    for (let i = 0; i < 100; i++) expect(ShareSlug.generateSlug(random)).toMatch(/^[A-Za-z0-9]{8}$/)
  })
})

describe("quota periods", () => {
  it("are the calendar month in UTC", () => {
    expect(Period.periodOf(Date.UTC(2026, 10, 30, 23, 59, 59, 999))).toBe("2026-11")
    expect(Period.periodOf(Date.UTC(2026, 11, 1, 0, 0, 0, 0))).toBe("2026-12")
    expect(Period.periodOf(Date.UTC(2026, 11, 31, 23, 59, 59, 999))).toBe("2026-12")
    expect(Period.periodOf(Date.UTC(2027, 0, 1))).toBe("2027-01")
    expect(Period.periodOf(0)).toBe("1970-01")
  })
})

describe("the built-in summary", () => {
  it("lists labels and values in schema order, skipping empty values", () => {
    const summary = Summary.summarize(
      everyFieldTypeSchema(),
      validSubmissionData({ phone: null, website: "", topics: [], notes: "Line one.\n  Line two." })
    )
    expect(summary).toBe(
      "Name: Ada Lovelace; Email: ada@example.com; Team size: 12; Newsletter: Yes; Start date: 2026-11-21; " +
        "Plan: growth; Notes: Line one. Line two."
    )
  })

  it("renders false, zero and lists", () => {
    const schema: Array<SchemaField> = [
      { name: "ok", label: "OK", type: "boolean" },
      { name: "n", label: "N", type: "number" },
      { name: "t", label: "Topics", type: "multi_select", options: ["a", "b"] }
    ]
    expect(Summary.summarize(schema, { ok: false, n: 0, t: ["a", "b"] })).toBe("OK: No; N: 0; Topics: a, b")
    expect(Summary.summarize(schema, {})).toBe("")
  })

  it("stays within 280 characters, cut at a word with an ellipsis", () => {
    const schema: Array<SchemaField> = [{ name: "notes", label: "Notes", type: "long_text" }]
    const summary = Summary.summarize(schema, { notes: "word ".repeat(200) })
    expect(summary.length).toBeLessThanOrEqual(280)
    expect(summary.endsWith("word…")).toBe(true)
    expect(summary.startsWith("Notes: word word")).toBe(true)
  })

  it("never splits a character made of two UTF-16 units", () => {
    const schema: Array<SchemaField> = [{ name: "x", label: "X", type: "text" }]
    const summary = Summary.summarize(schema, { x: "😀".repeat(300) })
    expect(summary.length).toBeLessThanOrEqual(280)
    expect(summary).toMatch(/^X: (😀)+…$/u)
  })

  it("keeps a summary of exactly 280 characters whole", () => {
    const schema: Array<SchemaField> = [{ name: "x", label: "X", type: "text" }]
    const value = "y".repeat(277)
    expect(Summary.summarize(schema, { x: value })).toBe(`X: ${value}`)
    expect(Summary.summarize(schema, { x: `${value}y` })).toHaveLength(280)
  })
})
