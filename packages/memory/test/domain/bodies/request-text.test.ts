import { describe, expect, it } from "@effect/vitest"
import { DateTimes, invalid, JsonText, MAX_LISTED_ISSUES } from "@intake/domain/internal"

describe("JSON bodies", () => {
  it("accepts ordinary text, emoji (surrogate pairs) and 64 levels", () => {
    const body = JSON.parse(`{"a":["Zoë 😀",{"b":null}],"c":${"[".repeat(62)}${"]".repeat(62)}}`)
    expect(JsonText.jsonBodyIssues(body)).toEqual({ issues: [], unknownKeys: [] })
  })

  it("refuses NUL and lone surrogates in values and keys, at their paths", () => {
    const body = JSON.parse('{"a":["ok","x\\u0000"],"b\\u0000":1,"c":{"d":"\\ud800x","e":"\\udc00"}}')
    expect(JsonText.jsonBodyIssues(body).issues).toEqual([
      { path: "a.1", message: expect.stringMatching(/NUL/) },
      { path: "b\u0000", message: expect.stringMatching(/NUL/) },
      { path: "c.d", message: expect.stringMatching(/surrogate/) },
      { path: "c.e", message: expect.stringMatching(/surrogate/) }
    ])
  })

  it("refuses __proto__ at any depth as an unknown key", () => {
    const found = JsonText.jsonBodyIssues(JSON.parse('{"data":{"__proto__":{"polluted":true}}}'))
    expect(found.issues).toEqual([{ path: "data.__proto__", message: "is not a field of this request" }])
    expect(found.unknownKeys).toEqual(["__proto__"])
  })

  it("refuses past 64 levels with one issue, without recursing on 100,000 levels", () => {
    const deep = JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`)
    expect(JsonText.jsonBodyIssues(deep).issues).toEqual([
      { path: "", message: `the body nests deeper than ${JsonText.MAX_JSON_DEPTH} levels` }
    ])
  })
})

describe("validation answers", () => {
  it("list at most 100 issues and unknown keys, and say how many there were", () => {
    const keys = Array.from({ length: 250 }, (_, i) => `k${i}`)
    const failure = invalid(
      keys.map((key) => ({ path: key, message: "is not a field of this request" })),
      { unknownKeys: keys }
    )
    expect(failure.details.issues).toHaveLength(MAX_LISTED_ISSUES)
    expect(failure.details).toMatchObject({ issue_count: 250, unknown_key_count: 250 })
    expect(failure.details.unknown_keys).toEqual(keys.slice(0, MAX_LISTED_ISSUES))
    expect(invalid([{ path: "a", message: "x" }]).details).toEqual({ issues: [{ path: "a", message: "x" }] })
  })
})

describe("date-times", () => {
  it.each([
    ["2026-11-21T10:00:00.000Z", Date.UTC(2026, 10, 21, 10)],
    ["2028-02-29T23:59:59Z", Date.UTC(2028, 1, 29, 23, 59, 59)],
    ["2026-11-21T10:00+01:00", Date.UTC(2026, 10, 21, 9)],
    ["1970-01-01T00:00:00.000Z", 0],
    ["9999-12-31T23:59:59.999Z", DateTimes.LATEST_DATE_TIME]
  ])("%s is a moment", (text, millis) => {
    expect(DateTimes.parseDateTime(text)).toBe(millis)
  })

  it.each([
    "0000-01-01T00:00:00.000Z",
    "1969-12-31T23:59:59.999Z",
    "2026-02-30T00:00:00.000Z",
    "2027-02-29T00:00:00.000Z",
    "2026-11-21T24:00:00.000Z",
    "2026-11-21T10:60:00Z",
    "2026-11-21T10:00:60Z",
    "2026-11-21T10:00:00+24:00",
    "2026-11-21T10:00:00",
    "2026-11-21",
    "+010000-01-01T00:00:00.000Z"
  ])("%s is not", (text) => {
    expect(DateTimes.parseDateTime(text)).toBeUndefined()
  })
})
