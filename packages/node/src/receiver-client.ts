/**
 * The ReceiverClient over node:http(s), with the outgoing-request guard: the receiver's
 * name is resolved here, every address is checked against the receiver-address rule
 * (loopback, private, link-local, multicast and reserved ranges are refused, IPv4-mapped
 * IPv6 included, unless private networks are allowed), and the socket connects to the
 * address that was checked: the request goes to that address as its origin, with the
 * receiver's name in `Host` (and in TLS's SNI and certificate check), so a name that is
 * re-pointed between the check and the connection (DNS rebinding) cannot swap it.
 * Redirects are not followed (undici's dispatch never does), the whole exchange has a time
 * limit, and at most the first 1 KB of the answer is read.
 *
 * Sent with undici's `Agent.dispatch` (the HTTP client Node itself ships): a keep-alive pool
 * per origin, no stream or promise per exchange. It costs about a third of node:http's CPU
 * per request (docs/webhooks.md, "How the engine sends").
 */
import { isIP } from "node:net"
import {
  AddressResolver,
  ReceiverClient,
  type ReceiverRequest,
  type ReceiverResponse,
  ReceiverUnreachable,
  WebhookUrl
} from "@intake/domain/internal"
import { Effect, Layer } from "effect"
import { Agent, type Dispatcher } from "undici"

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

/** The origin to connect to: the vetted address, never the name. */
const originOf = (url: URL, vetted: VettedAddress): string =>
  `${url.protocol}//${vetted.family === 6 ? `[${vetted.address}]` : vetted.address}${url.port === "" ? "" : `:${url.port}`}`

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
    // Idle keep-alive sockets close after 4 s, under most servers' own keep-alive limit (5 s in Node).
    const agent = new Agent({ keepAliveTimeout: 4_000, connect: { timeout: timeoutMs } })
    yield* Effect.addFinalizer(() => Effect.promise(() => agent.destroy().catch(() => undefined)))

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
        let controller: Dispatcher.DispatchController | undefined
        let status = 0
        let retryAfter: string | null = null
        const chunks: Array<Buffer> = []
        let size = 0
        const settle = (effect: Effect.Effect<ReceiverResponse, ReceiverUnreachable>) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resume(effect)
        }
        const answer = () =>
          settle(
            Effect.succeed({
              status,
              body: Buffer.concat(chunks).subarray(0, maxBodyBytes).toString("utf8"),
              retryAfter
            })
          )
        const timer = setTimeout(() => {
          settle(
            Effect.fail(new ReceiverUnreachable({ message: `no answer within ${timeoutMs / 1000} seconds` }))
          )
          controller?.abort(new Error("timed out"))
        }, timeoutMs)
        agent.dispatch(
          {
            origin: originOf(url, vetted),
            path: `${url.pathname}${url.search}`,
            method: "POST",
            // The name, not the address: what the receiver and its certificate answer to.
            headers: { ...request.headers, host: url.host },
            body: request.body
          },
          {
            onRequestStart: (started) => {
              controller = started
              if (settled) started.abort(new Error("cancelled"))
            },
            onResponseStart: (_, statusCode, headers) => {
              status = statusCode
              const value = headers["retry-after"]
              retryAfter = typeof value === "string" ? value : null
            },
            onResponseData: (reading, chunk) => {
              if (settled) return
              chunks.push(chunk)
              size += chunk.length
              if (size >= maxBodyBytes) {
                answer()
                // The rest is not wanted: drop the connection rather than read it.
                reading.abort(new Error("answer cut at its first bytes"))
              }
            },
            onResponseEnd: answer,
            onResponseError: (_, error) =>
              status === 0
                ? settle(Effect.fail(new ReceiverUnreachable({ message: connectionError(error) })))
                : answer()
          }
        )
        return Effect.sync(() => {
          clearTimeout(timer)
          settled = true
          controller?.abort(new Error("cancelled"))
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
