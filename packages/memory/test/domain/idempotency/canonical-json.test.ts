import { describe, expect, it } from "@effect/vitest"
import { CanonicalJson } from "@intake/domain/internal"

describe("canonicalJson", () => {
  it("sorts keys at every depth and drops whitespace", () => {
    const a = JSON.parse('{ "b": 1, "a": { "y": [ {"d": 1, "c": 2} ], "x": null } }')
    const b = JSON.parse('{"a":{"x":null,"y":[{"c":2,"d":1}]},"b":1}')
    expect(CanonicalJson.canonicalJson(a)).toBe('{"a":{"x":null,"y":[{"c":2,"d":1}]},"b":1}')
    expect(CanonicalJson.canonicalJson(b)).toBe(CanonicalJson.canonicalJson(a))
  })

  it("keeps array order and distinguishes values", () => {
    expect(CanonicalJson.canonicalJson([2, 1])).not.toBe(CanonicalJson.canonicalJson([1, 2]))
    expect(CanonicalJson.canonicalJson({ a: "1" })).not.toBe(CanonicalJson.canonicalJson({ a: 1 }))
    expect(CanonicalJson.canonicalJson({ a: null })).not.toBe(CanonicalJson.canonicalJson({}))
  })

  it("renders strings and numbers as JSON does", () => {
    expect(CanonicalJson.canonicalJson({ 'q"': 'line\n"é"', n: 1e21, f: 0.1 })).toBe(
      '{"f":0.1,"n":1e+21,"q\\"":"line\\n\\"é\\""}'
    )
  })

  it("no body differs from a null body", () => {
    expect(CanonicalJson.canonicalJson(undefined)).toBe("")
    expect(CanonicalJson.canonicalJson(null)).toBe("null")
  })

  it("undefined members are dropped, as JSON.stringify does", () => {
    expect(CanonicalJson.canonicalJson({ a: undefined, b: [undefined] })).toBe('{"b":[null]}')
  })
})
