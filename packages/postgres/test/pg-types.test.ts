import { describe, expect, it } from "@effect/vitest"
import pg from "pg"
import { parseTimestamptz } from "../src/pg-types.js"

const pgParser = pg.types.getTypeParser(1184, "text") as (text: string) => Date

describe("parseTimestamptz", () => {
  it.each([
    "2026-11-21 10:00:00.123+00",
    "2026-11-21 10:00:00+00",
    "2026-11-21 10:00:00.1+00",
    "2026-11-21 10:00:00.999999+00",
    "2026-11-21 10:00:00.123456+05:30",
    "2026-11-21 00:00:00.5-08",
    "2026-02-28 23:59:59.999+01:02:03",
    "1970-01-01 00:00:00+00",
    "0099-06-01 12:00:00+00",
    "2026-11-21 10:00:00.123+00 BC",
    "10000-01-01 00:00:00+00",
    "infinity",
    "-infinity"
  ])("reads %s exactly as pg's own parser", (text) => {
    const ours = parseTimestamptz(text)
    const theirs = pgParser(text)
    if (theirs instanceof Date) expect(ours.getTime()).toEqual(theirs.getTime())
    else expect(ours).toEqual(theirs)
  })
})

describe("parseTimestamptz, fractions of a second", () => {
  it("reads every fraction of one to three digits, and longer ones, as pg's parser does", () => {
    const fractions: Array<string> = []
    for (let ms = 0; ms < 1000; ms++) {
      const digits = String(ms).padStart(3, "0")
      fractions.push(digits, digits.replace(/0+$/, ""), `${digits}000`, `${digits}999`, `${digits}5`)
    }
    for (const fraction of fractions.filter((digits) => digits.length > 0)) {
      const text = `2026-11-21 10:00:59.${fraction}+00`
      expect([text, parseTimestamptz(text).getTime()]).toEqual([text, pgParser(text).getTime()])
    }
  })
})

describe("parseTimestamptz, value after value", () => {
  it("reads a run of values as pg's parser does, within a day, across days and back", () => {
    const start = Date.UTC(2026, 10, 21, 23, 59, 58, 7)
    const offsets = ["+00", "+05:30", "-08", "+01:02:03"]
    const texts: Array<string> = []
    for (let i = 0; i < 300; i++) {
      const millis = start + i * 997_123
      const iso = new Date(millis).toISOString()
      texts.push(
        `${iso.slice(0, 10)} ${iso.slice(11, 23)}${i % 3 === 0 ? "456" : ""}${offsets[i % offsets.length]}`
      )
    }
    for (const text of [...texts, ...[...texts].reverse(), "infinity", ...texts]) {
      const theirs = pgParser(text)
      const ours = parseTimestamptz(text)
      if (theirs instanceof Date) expect([text, ours.getTime()]).toEqual([text, theirs.getTime()])
      else expect(ours).toEqual(theirs)
    }
  })

  it("does not take a day it could not read for the one before", () => {
    expect(parseTimestamptz("2026-11-21 10:00:00+00").getTime()).toBe(
      pgParser("2026-11-21 10:00:00+00").getTime()
    )
    for (const text of ["2026-11-2x 10:00:00+00", "0099-11-21 10:00:00+00", "2026-11-21 1x:00:00+00"]) {
      const theirs = pgParser(text)
      const ours = parseTimestamptz(text)
      if (theirs instanceof Date) expect(ours.getTime()).toBe(theirs.getTime())
      else expect(ours).toEqual(theirs)
    }
    expect(parseTimestamptz("2026-11-21 10:00:00+00").getTime()).toBe(Date.UTC(2026, 10, 21, 10))
  })
})
