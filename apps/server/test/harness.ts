/** Starts the real server on a free port over the given services; tests talk to it over a socket. */
import { ClientAddress } from "@intake/domain/internal"
import { Context, type Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import type { CorsOrigins } from "../src/cors.js"
import { type AdmissionBounds, ListeningServer, serverLayer } from "../src/server.js"

export const ADMIN_TOKEN = "test-admin-token-0123456789"

export class BaseUrl extends Context.Tag("test/BaseUrl")<BaseUrl, string>() {}

export const testServer = <E, R>(
  services: Layer.Layer<R, E>,
  options: {
    readonly admin?: boolean
    readonly requestTimeout?: Duration.DurationInput
    readonly bodyTimeout?: Duration.DurationInput
    /** Node's headersTimeout, in ms. */
    readonly headersTimeoutMs?: number
    /** How long a keep-alive connection may wait for its next request, in ms. */
    readonly idleTimeoutMs?: number
    readonly admission?: Partial<AdmissionBounds>
    /** INTAKE_TRUSTED_PROXIES, as its text. */
    readonly trustedProxies?: string
    readonly corsOrigins?: CorsOrigins
    /** INTAKE_METRICS_TOKEN. */
    readonly metricsToken?: string
  } = {}
) =>
  Layer.effect(
    BaseUrl,
    Effect.map(ListeningServer, ({ port }) => `http://127.0.0.1:${port}`)
  ).pipe(
    Layer.provideMerge(
      serverLayer({
        port: 0,
        host: "127.0.0.1",
        adminToken: options.admin === false ? Option.none() : Option.some(Redacted.make(ADMIN_TOKEN)),
        ...(options.requestTimeout === undefined ? {} : { requestTimeout: options.requestTimeout }),
        ...(options.bodyTimeout === undefined ? {} : { bodyTimeout: options.bodyTimeout }),
        ...(options.headersTimeoutMs === undefined ? {} : { headersTimeoutMs: options.headersTimeoutMs }),
        ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs }),
        ...(options.admission === undefined ? {} : { admission: options.admission }),
        ...(options.trustedProxies === undefined
          ? {}
          : { trustedProxies: Either.getOrThrow(ClientAddress.parseTrustedProxies(options.trustedProxies)) }),
        ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
        ...(options.metricsToken === undefined
          ? {}
          : { metricsToken: Option.some(Redacted.make(options.metricsToken)) })
      })
    ),
    Layer.provide(services)
  )

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: unknown
}

/** One request with fetch; the body parsed as JSON (or the raw text when it is not JSON). */
export const call = (
  baseUrl: string,
  method: string,
  path: string,
  options: { readonly key?: string; readonly body?: unknown; readonly headers?: Record<string, string> } = {}
) =>
  Effect.promise(async (): Promise<Answer> => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
    let body: string | undefined
    if (options.body !== undefined) {
      body = typeof options.body === "string" ? options.body : JSON.stringify(options.body)
      headers["content-type"] ??= "application/json"
    }
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body })
    })
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {}
    return { status: response.status, headers: response.headers, body: parsed }
  })
