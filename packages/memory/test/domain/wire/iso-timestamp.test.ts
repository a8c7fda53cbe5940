import { describe, expect, it } from "@effect/vitest"
import { WireShapes } from "@intake/domain/internal"

const DAY = 86_400_000
const rendered = (millis: number) => new Date(millis).toISOString()

describe("isoTimestamp", () => {
  it("renders what toISOString renders, within a day, across days and back to a day seen before", () => {
    const start = Date.UTC(2026, 10, 21, 23, 59, 58, 7)
    // Steps of a minute and 7 ms for three days, then the same instants backwards: every
    // hour and minute, varied seconds and milliseconds, day changes both ways, the cached day
    // reused and replaced.
    const forward = Array.from({ length: Math.ceil((3 * DAY) / 60_007) }, (_, i) => start + i * 60_007)
    for (const millis of [...forward, ...[...forward].reverse()]) {
      expect(WireShapes.isoTimestamp(millis)).toBe(rendered(millis))
    }
  })

  it("renders alike when calls alternate between two days and now and then a third (a create's now and expiries)", () => {
    const now = Date.UTC(2026, 10, 21, 23, 59, 59, 990)
    const instants = Array.from({ length: 40 }, (_, i) => {
      const at = now + i * 1_001
      return i % 7 === 6 ? at + 3 * DAY : i % 2 === 0 ? at : at + DAY
    })
    for (const millis of instants) expect(WireShapes.isoTimestamp(millis)).toBe(rendered(millis))
  })

  it.each([
    0,
    -1,
    -DAY,
    -DAY + 1,
    DAY - 1,
    Date.UTC(1969, 11, 31, 23, 59, 59, 999),
    Date.UTC(2024, 1, 29, 12, 0, 0, 0),
    Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    Date.UTC(10000, 0, 1),
    Date.UTC(-1, 0, 1),
    Date.UTC(0, 0, 1, 0, 0, 0, 1) - 1,
    8.64e15,
    -8.64e15,
    1.5,
    -1.5,
    -0.5,
    Date.UTC(2026, 10, 21, 10, 0, 0, 999) + 0.75
  ])("renders %d as toISOString does, outside the years 0000-9999 and fractions included", (millis) => {
    expect(WireShapes.isoTimestamp(millis)).toBe(rendered(millis))
    // Again, now that its day may be the cached one.
    expect(WireShapes.isoTimestamp(millis)).toBe(rendered(millis))
  })

  it("refuses what toISOString refuses", () => {
    expect(() => WireShapes.isoTimestamp(Number.NaN)).toThrow(RangeError)
    expect(() => WireShapes.isoTimestamp(8.64e15 + 1)).toThrow(RangeError)
  })
})
