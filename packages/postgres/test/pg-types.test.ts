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
