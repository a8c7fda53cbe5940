/**
 * The ReceiverClient over node:http(s), with the outgoing-request guard: the receiver's
 * name is resolved here, every address is checked against the receiver-address rule
 * (loopback, private, link-local, multicast and reserved ranges are refused, IPv4-mapped
 * IPv6 included, unless private networks are allowed), and the socket connects to the
 * address that was checked, through a `lookup` that answers only it, so a name that is
 * re-pointed between the check and the connection (DNS rebinding) cannot swap it.
 * Redirects are not followed (node:http never does), the whole exchange has a time
 * limit, and at most the first 1 KB of the answer is read.
 */
import * as http from "node:http"
import * as https from "node:https"
import { isIP, type LookupFunction } from "node:net"
import {
  AddressResolver,
  ReceiverClient,
  type ReceiverRequest,
  type ReceiverResponse,
  ReceiverUnreachable,
  WebhookUrl
} from "@intake/domain/internal"
import { Effect, Layer } from "effect"

export interface ReceiverClientOptions {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: admit loopback and private receivers (development, tests). */
  readonly allowPrivateNetworks: boolean
  /** Default 10 s, for the whole exchange. */
  readonly timeoutMs?: number
  /** Default 1,024 bytes. */
  readonly maxBodyBytes?: number
}

interface VettedAddress {
  readonly address: string
  readonly family: 4 | 6
}

const refused = (message: string) => Effect.fail(new ReceiverUnreachable({ message: `not sent: ${message}` }))

const familyOf = (address: string): 4 | 6 => (isIP(address) === 6 ? 6 : 4)

/** A lookup that answers the vetted address whatever name it is asked for. */
const pinnedLookup =
  (vetted: VettedAddress): LookupFunction =>
  (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all === true)
      (callback as unknown as (e: null, a: ReadonlyArray<{ address: string; family: number }>) => void)(
        null,
        [{ address: vetted.address, family: vetted.family }]
      )
    else callback(null, vetted.address, vetted.family)
  }

const connectionError = (error: unknown): string => {
  const code = (error as { code?: unknown })?.code
  if (typeof code === "string") return `could not reach the receiver (${code})`
  return error instanceof Error ? error.message : "could not reach the receiver"
}

export const makeNodeReceiverClient = (options: ReceiverClientOptions) =>
  Effect.gen(function* () {
    const resolver = yield* AddressResolver
    const timeoutMs = options.timeoutMs ?? 10_000
    const maxBodyBytes = options.maxBodyBytes ?? 1024
    const allowed = { allowPrivateNetworks: options.allowPrivateNetworks }
    const agents = {
      "http:": new http.Agent({ keepAlive: true }),
      "https:": new https.Agent({ keepAlive: true })
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        agents["http:"].destroy()
        agents["https:"].destroy()
      })
    )

    /** The address to connect to, checked; refused when any address of the name is forbidden. */
    const vet = (hostname: string): Effect.Effect<VettedAddress, ReceiverUnreachable> =>
      Effect.gen(function* () {
        const host = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname
        if (isIP(host) !== 0) {
          if (!WebhookUrl.isAllowedAddress(host, allowed))
            return yield* refused(`${host} is a ${WebhookUrl.classifyAddress(host)} address`)
          return { address: host, family: familyOf(host) }
        }
        if (!options.allowPrivateNetworks && WebhookUrl.isLoopbackName(host))
          return yield* refused(`${host} is a loopback name`)
        const addresses = yield* Effect.mapError(
          resolver.resolve(host),
          () => new ReceiverUnreachable({ message: `not sent: ${host} could not be resolved` })
        )
        if (addresses.length === 0) return yield* refused(`${host} does not resolve to an address`)
        const forbidden = addresses.find((address) => !WebhookUrl.isAllowedAddress(address, allowed))
        if (forbidden !== undefined)
          return yield* refused(
            `${host} resolves to a ${WebhookUrl.classifyAddress(forbidden)} address (${forbidden})`
          )
        return { address: addresses[0]!, family: familyOf(addresses[0]!) }
      })

    const exchange = (url: URL, request: ReceiverRequest, vetted: VettedAddress) =>
      Effect.async<ReceiverResponse, ReceiverUnreachable>((resume) => {
        let settled = false
        const settle = (effect: Effect.Effect<ReceiverResponse, ReceiverUnreachable>) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resume(effect)
        }
        const body = Buffer.from(request.body, "utf8")
        const protocol = url.protocol === "https:" ? "https:" : "http:"
        const send = protocol === "https:" ? https.request : http.request
        const outgoing = send(url, {
          method: "POST",
          agent: agents[protocol],
          lookup: pinnedLookup(vetted),
          headers: { ...request.headers, "content-length": String(body.length) }
        })
        const timer = setTimeout(() => {
          settle(
            Effect.fail(new ReceiverUnreachable({ message: `no answer within ${timeoutMs / 1000} seconds` }))
          )
          outgoing.destroy()
        }, timeoutMs)
        outgoing.on("error", (error) =>
          settle(Effect.fail(new ReceiverUnreachable({ message: connectionError(error) })))
        )
        outgoing.on("response", (response) => {
          const chunks: Array<Buffer> = []
          let size = 0
          const retryAfter = response.headers["retry-after"]
          const answer = (): Effect.Effect<ReceiverResponse> =>
            Effect.succeed({
              status: response.statusCode ?? 0,
              body: Buffer.concat(chunks).subarray(0, maxBodyBytes).toString("utf8"),
              retryAfter: typeof retryAfter === "string" ? retryAfter : null
            })
          response.on("data", (chunk: Buffer) => {
            if (settled) return
            chunks.push(chunk)
            size += chunk.length
            if (size >= maxBodyBytes) {
              settle(answer())
              // The rest is not wanted: drop the connection rather than read it.
              response.destroy()
            }
          })
          response.on("end", () => settle(answer()))
          response.on("error", () => settle(answer()))
          response.on("aborted", () => settle(answer()))
        })
        outgoing.end(body)
        return Effect.sync(() => {
          clearTimeout(timer)
          outgoing.destroy()
        })
      })

    return ReceiverClient.of({
      send: (request) =>
        Effect.gen(function* () {
          let url: URL
          try {
            url = new URL(request.url)
          } catch {
            return yield* refused("the receiver URL is not an absolute URL")
          }
          if (url.protocol !== "https:" && url.protocol !== "http:")
            return yield* refused("the receiver URL must use https or http")
          const vetted = yield* vet(url.hostname)
          return yield* exchange(url, request, vetted)
        })
    })
  })

/** The ReceiverClient on node:http(s); needs an AddressResolver (NodeAddressResolver in production). */
export const NodeReceiverClient = (
  options: ReceiverClientOptions
): Layer.Layer<ReceiverClient, never, AddressResolver> =>
  Layer.scoped(ReceiverClient, makeNodeReceiverClient(options))
