import { describe, expect, it } from "@effect/vitest"
import { queryParams } from "../src/request.js"

describe("queryParams", () => {
  it("reads every query as Object.fromEntries(new URLSearchParams(query)) does", () => {
    const queries = [
      "",
      "limit=50",
      "limit=50&cursor=abc",
      "a=1&a=2",
      "&&x",
      "x=",
      "=y",
      "a=b=c",
      "__proto__=1",
      "constructor=2&toString=3",
      "a&b=2;c=3",
      "é=ü",
      "name=J%C3%BCrgen+Smith",
      "bad=%E0%A4%A",
      "plus=a+b",
      "?limit=5",
      "created_after=2026-11-01T00:00:00.000Z"
    ]
    for (const query of queries) {
      expect(queryParams(query), query).toEqual(Object.fromEntries(new URLSearchParams(query)))
      expect(Object.getPrototypeOf(queryParams(query))).toBe(Object.prototype)
    }
  })
})
