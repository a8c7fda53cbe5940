import { describe, expect, it } from "@effect/vitest"
import { ClientAddress } from "@intake/domain/internal"
import { Either } from "effect"

const trusted = (text: string) => Either.getOrThrow(ClientAddress.parseTrustedProxies(text))
const client = (socket: string, forwardedFor: string | undefined, proxies: string) =>
  ClientAddress.clientAddress(socket, forwardedFor, trusted(proxies))

describe("client address behind trusted proxies", () => {
  it("without trusted proxies the socket address is the client, whatever X-Forwarded-For says", () => {
    expect(client("203.0.113.9", "198.51.100.1", "")).toBe("203.0.113.9")
    expect(client("10.0.0.2", "198.51.100.1", "")).toBe("10.0.0.2")
    expect(client("10.0.0.2", undefined, "")).toBe("10.0.0.2")
  })

  it("a peer that is not a trusted proxy is the client: its X-Forwarded-For is not believed", () => {
    expect(client("203.0.113.9", "198.51.100.1", "10.0.0.0/8")).toBe("203.0.113.9")
    expect(client("11.0.0.1", "198.51.100.1", "10.0.0.0/8")).toBe("11.0.0.1")
  })

  it("a trusted proxy's client is the address it appended", () => {
    expect(client("10.0.0.2", "198.51.100.1", "10.0.0.0/8")).toBe("198.51.100.1")
    expect(client("10.0.0.2", " 198.51.100.1 ", "10.0.0.2")).toBe("198.51.100.1")
  })

  it("walks from the right past trusted hops only; what the client wrote on the left is ignored", () => {
    // The client sent "X-Forwarded-For: 1.1.1.1"; the edge proxy appended the client, the inner one the edge.
    expect(client("10.0.0.2", "1.1.1.1, 198.51.100.1, 10.0.0.7", "10.0.0.0/8")).toBe("198.51.100.1")
    expect(client("10.0.0.2", "1.1.1.1,198.51.100.1,10.0.0.7,10.1.2.3", "10.0.0.0/8")).toBe("198.51.100.1")
    // A forged trusted-looking entry left of the real client does not move the answer.
    expect(client("10.0.0.2", "10.9.9.9, 198.51.100.1", "10.0.0.0/8")).toBe("198.51.100.1")
  })

  it("every hop trusted: the leftmost one (the request came from inside)", () => {
    expect(client("10.0.0.2", "10.0.0.5, 10.0.0.7", "10.0.0.0/8")).toBe("10.0.0.5")
  })

  it("no header, or an empty one, from a trusted proxy: the proxy itself", () => {
    expect(client("10.0.0.2", undefined, "10.0.0.0/8")).toBe("10.0.0.2")
    expect(client("10.0.0.2", "", "10.0.0.0/8")).toBe("10.0.0.2")
    expect(client("10.0.0.2", " , ", "10.0.0.0/8")).toBe("10.0.0.2")
  })

  it("an entry that is not an address stops the walk at the last trusted hop", () => {
    expect(client("10.0.0.2", "unknown", "10.0.0.0/8")).toBe("10.0.0.2")
    expect(client("10.0.0.2", "198.51.100.1, garbage, 10.0.0.7", "10.0.0.0/8")).toBe("10.0.0.7")
    expect(client("10.0.0.2", "198.51.100.1, 999.1.1.1", "10.0.0.0/8")).toBe("10.0.0.2")
  })

  it("entries with a port or brackets are read as their address", () => {
    expect(client("10.0.0.2", "198.51.100.1:51234", "10.0.0.0/8")).toBe("198.51.100.1")
    expect(client("10.0.0.2", "[2001:db8::5]:443", "10.0.0.0/8")).toBe("2001:db8::5")
    expect(client("10.0.0.2", "[2001:db8::5]", "10.0.0.0/8")).toBe("2001:db8::5")
  })

  it("IPv6 proxies and clients, and CIDR ranges of every length", () => {
    expect(client("fd00::1", "2001:db8::5", "fd00::/8")).toBe("2001:db8::5")
    expect(client("2001:db8:1::9", "2001:db8::5, 2001:db8:1::3", "2001:db8:1::/48")).toBe("2001:db8::5")
    expect(client("::1", "198.51.100.1", "::1")).toBe("198.51.100.1")
    expect(client("::2", "198.51.100.1", "::1")).toBe("::2")
    expect(client("10.0.0.2", "198.51.100.1", "0.0.0.0/0")).toBe("198.51.100.1")
    expect(client("192.168.1.7", "198.51.100.1", "192.168.1.7/32")).toBe("198.51.100.1")
    expect(client("192.168.1.8", "198.51.100.1", "192.168.1.7/32")).toBe("192.168.1.8")
    expect(client("192.168.1.9", "198.51.100.1", "192.168.1.8/31")).toBe("198.51.100.1")
    expect(client("192.168.1.10", "198.51.100.1", "192.168.1.8/31")).toBe("192.168.1.10")
  })

  it("an IPv4 range also covers the IPv4-mapped IPv6 form Node reports on a dual-stack socket", () => {
    expect(client("::ffff:10.0.0.2", "198.51.100.1", "10.0.0.0/8")).toBe("198.51.100.1")
    expect(client("::ffff:127.0.0.1", "198.51.100.1", "127.0.0.1")).toBe("198.51.100.1")
    expect(client("10.0.0.2", "198.51.100.1", "::ffff:10.0.0.0/104")).toBe("198.51.100.1")
  })

  it("a socket address that is not an IP (unknown) is never trusted", () => {
    expect(client("unknown", "198.51.100.1", "0.0.0.0/0")).toBe("unknown")
  })
})

describe("INTAKE_TRUSTED_PROXIES values", () => {
  it("takes addresses and CIDR ranges, IPv4 and IPv6, comma-separated with spaces", () => {
    const ranges = trusted(" 10.0.0.0/8, 192.168.1.7 ,2001:db8::/32,::1 ")
    expect(ranges).toHaveLength(4)
    expect(ranges.map((range) => range.prefixBits)).toEqual([104, 128, 32, 128])
    expect(trusted("")).toEqual([])
  })

  it("refuses anything else, naming the bad entry", () => {
    for (const bad of [
      "10.0.0.0/33",
      "2001:db8::/129",
      "10.0.0.0/",
      "10.0.0.0/8/8",
      "10.0.0.0/08",
      "10.0.0",
      "example.com",
      "10.0.0.1-10.0.0.9",
      "fe80::1%eth0",
      "10.0.0.0/8, nope"
    ]) {
      const parsed = ClientAddress.parseTrustedProxies(bad)
      expect(Either.isLeft(parsed), bad).toBe(true)
      if (Either.isLeft(parsed)) expect(parsed.left).toMatch(/"[^"]+"/)
    }
  })
})
