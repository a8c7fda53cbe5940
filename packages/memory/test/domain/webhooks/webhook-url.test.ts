import { describe, expect, it } from "@effect/vitest"
import { WebhookUrl } from "@intake/domain/internal"

describe("classifyAddress", () => {
  const cases: ReadonlyArray<readonly [string, WebhookUrl.AddressClass]> = [
    // IPv4
    ["8.8.8.8", "public"],
    ["93.184.216.34", "public"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "reserved"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["100.63.255.255", "public"],
    ["100.64.0.1", "private"],
    ["100.127.255.255", "private"],
    ["100.128.0.0", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["169.254.169.254", "link-local"],
    ["172.15.255.255", "public"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.0", "public"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "reserved"],
    ["192.0.3.1", "public"],
    ["192.168.1.1", "private"],
    ["198.17.255.255", "public"],
    ["198.18.0.1", "reserved"],
    ["198.19.255.255", "reserved"],
    ["198.20.0.0", "public"],
    ["198.51.100.7", "reserved"],
    ["203.0.113.9", "reserved"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    // IPv6
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["2606:4700:4700::1111", "public"],
    ["2001:4860:4860::8888", "public"],
    ["fc00::1", "private"],
    ["fd12:3456:789a::1", "private"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf::1", "link-local"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["ff0e::1", "multicast"],
    ["2001:db8::1", "reserved"],
    ["2001::1", "reserved"],
    ["100::1", "reserved"],
    // IPv4-mapped, in dotted and hex forms
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::FFFF:7F00:0001", "loopback"],
    ["::ffff:10.1.2.3", "private"],
    ["::ffff:a9fe:a9fe", "link-local"],
    ["::ffff:8.8.8.8", "public"],
    ["::ffff:0.0.0.0", "unspecified"],
    // IPv4-compatible (deprecated) and translation prefixes
    ["::127.0.0.1", "loopback"],
    ["::7f00:1", "loopback"],
    ["::a00:1", "private"],
    ["64:ff9b::7f00:1", "loopback"],
    ["64:ff9b::8.8.8.8", "public"],
    ["64:ff9b:1::1", "private"],
    ["2002:7f00:1::", "loopback"],
    ["2002:c0a8:101::1", "private"],
    ["2002:808:808::1", "public"],
    // Brackets as in URLs
    ["[::1]", "loopback"]
  ]
  for (const [ip, expected] of cases) {
    it(`${ip} is ${expected}`, () => {
      expect(WebhookUrl.classifyAddress(ip)).toBe(expected)
    })
  }

  it("text that is not an IP literal is never public", () => {
    for (const text of ["example.com", "1.2.3", "1.2.3.256", "01.2.3.4", "1::2::3", "12345::", "", "::g"])
      expect(WebhookUrl.classifyAddress(text)).toBe("reserved")
  })
})

describe("parseIPv6", () => {
  it("expands compressed forms to sixteen bytes", () => {
    expect(WebhookUrl.parseIPv6("1::")).toEqual([0, 1, ...Array(14).fill(0)])
    expect(WebhookUrl.parseIPv6("::ffff:1.2.3.4")).toEqual([...Array(10).fill(0), 255, 255, 1, 2, 3, 4])
    expect(WebhookUrl.parseIPv6("1:2:3:4:5:6:7:8")?.length).toBe(16)
  })

  it("refuses malformed literals", () => {
    for (const text of [
      "1:2:3:4:5:6:7",
      "1:2:3:4:5:6:7:8:9",
      "1::2:3:4:5:6:7:8",
      ":::",
      "1.2.3.4::",
      "::1.2.3.4:5",
      "12345::1"
    ])
      expect(WebhookUrl.parseIPv6(text)).toBeNull()
  })
})

describe("checkUrlSyntax", () => {
  const strict = { allowPrivateNetworks: false }
  const open = { allowPrivateNetworks: true }
  const problem = (raw: string, options = strict) => {
    const check = WebhookUrl.checkUrlSyntax(raw, options)
    return check._tag === "Invalid" ? check.issues : []
  }

  it("accepts an https URL and names its host", () => {
    expect(WebhookUrl.checkUrlSyntax("https://Hooks.Example.com:8443/in?x=1", strict)).toEqual({
      _tag: "Valid",
      target: { host: "hooks.example.com", isAddress: false }
    })
  })

  it("recognizes IP literal hosts, also in the forms the URL parser normalizes", () => {
    const target = (raw: string) => {
      const check = WebhookUrl.checkUrlSyntax(raw, open)
      return check._tag === "Valid" ? check.target : null
    }
    expect(target("http://[::1]:8080/")).toEqual({ host: "::1", isAddress: true })
    expect(target("http://[::ffff:127.0.0.1]/")).toEqual({ host: "::ffff:7f00:1", isAddress: true })
    // Decimal and hex IPv4 forms are normalized to dotted quads.
    expect(target("http://2130706433/")).toEqual({ host: "127.0.0.1", isAddress: true })
    expect(target("http://0x7f.1/")).toEqual({ host: "127.0.0.1", isAddress: true })
  })

  it("refuses http unless private networks are allowed", () => {
    expect(problem("http://example.com/")).toEqual([{ path: "url", message: "must use https" }])
    expect(problem("http://example.com/", open)).toEqual([])
  })

  it("refuses other schemes, relative URLs and non-URLs", () => {
    for (const raw of ["ftp://example.com/", "file:///etc/passwd", "/hooks", "example.com", "", "https://"]) {
      const issues = problem(raw, open)
      expect(issues).toHaveLength(1)
      expect(issues[0]!.path).toBe("url")
    }
  })

  it("refuses a user or a password", () => {
    expect(problem("https://user@example.com/")).toEqual([
      { path: "url", message: "must not contain a user or password" }
    ])
    expect(problem("https://:secret@example.com/")).toHaveLength(1)
  })

  it("accepts 2,048 characters and refuses 2,049", () => {
    const base = "https://example.com/"
    expect(problem(base + "a".repeat(2048 - base.length))).toEqual([])
    expect(problem(base + "a".repeat(2049 - base.length))).toEqual([
      { path: "url", message: "must be at most 2048 characters" }
    ])
  })

  it("refuses whitespace and control characters the parser would drop", () => {
    expect(problem(" https://example.com/")).toHaveLength(1)
    expect(problem("https://exa\tmple.com/")).toHaveLength(1)
    expect(problem("https://example.com/\n")).toHaveLength(1)
  })
})

describe("address rules", () => {
  it("only public addresses pass unless private networks are allowed", () => {
    expect(WebhookUrl.isAllowedAddress("93.184.216.34", { allowPrivateNetworks: false })).toBe(true)
    expect(WebhookUrl.isAllowedAddress("10.0.0.1", { allowPrivateNetworks: false })).toBe(false)
    expect(WebhookUrl.isAllowedAddress("10.0.0.1", { allowPrivateNetworks: true })).toBe(true)
  })

  it("localhost names are loopback without a lookup", () => {
    expect(WebhookUrl.isLoopbackName("localhost")).toBe(true)
    expect(WebhookUrl.isLoopbackName("LOCALHOST.")).toBe(true)
    expect(WebhookUrl.isLoopbackName("api.localhost")).toBe(true)
    expect(WebhookUrl.isLoopbackName("localhost.example.com")).toBe(false)
  })
})
