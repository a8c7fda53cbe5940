/** The HTTP server as a layer: the app on a node:http server, per-request tracing off. */
import { createServer, type Server, type ServerResponse } from "node:http"
import { HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { type AppOptions, makeApp } from "./app.js"

export interface ListenOptions extends AppOptions {
  /** 0 picks a free port (tests). */
  readonly port: number
  readonly host?: string
  /** How long a stopping server waits for the requests in flight (default 10 s). */
  readonly shutdownTimeoutMs?: number
}

export const SHUTDOWN_TIMEOUT_MS = 10_000

/**
 * A node:http server that knows its requests in flight, and the finalizer that stops it
 * gracefully: stop accepting, close idle connections, let the requests in flight finish
 * (within `timeoutMs`), then close every connection left.
 */
const drainingServer = (timeoutMs: number) => {
  let server: Server | undefined
  const inFlight = new Set<ServerResponse>()
  let onSettled: (() => void) | undefined
  const evaluate = () => {
    server = createServer()
    server.on("request", (_request, response: ServerResponse) => {
      inFlight.add(response)
      response.once("close", () => {
        inFlight.delete(response)
        onSettled?.()
      })
    })
    return server
  }
  const drain = Effect.async<void>((resume) => {
    const node = server
    if (node === undefined || !node.listening) return resume(Effect.void)
    node.close()
    node.closeIdleConnections()
    let done = false
    const finish = () => {
      if (done) return
      done = true
      onSettled = undefined
      clearTimeout(timer)
      node.closeAllConnections()
      resume(Effect.void)
    }
    const timer = setTimeout(finish, timeoutMs)
    onSettled = () => {
      // A finished response leaves its keep-alive connection idle: nothing more comes on it.
      node.closeIdleConnections()
      if (inFlight.size === 0) finish()
    }
    if (inFlight.size === 0) finish()
    return Effect.sync(finish)
  })
  return { evaluate, drain }
}

/**
 * Serves the app. Needs the use cases and the Crypto port (the services of
 * handlers-v1.ts and handlers-admin.ts); provides the HttpServer, whose `address` tells the port.
 * Closing the layer (SIGTERM, SIGINT) drains the server before the services close.
 */
export const serverLayer = (options: ListenOptions) => {
  const { evaluate, drain } = drainingServer(options.shutdownTimeoutMs ?? SHUTDOWN_TIMEOUT_MS)
  const serving = HttpServer.serve(makeApp(options)).pipe(
    // Per-request spans cost a measurable share of throughput and nobody reads them here.
    HttpMiddleware.withTracerDisabledWhen(() => true),
    Layer.provideMerge(
      NodeHttpServer.layer(evaluate, {
        port: options.port,
        ...(options.host === undefined ? {} : { host: options.host })
      })
    )
  )
  // Built after `serving`, so released before it: the requests in flight finish while the
  // app still handles requests and every service is still up.
  return Layer.scopedDiscard(Effect.addFinalizer(() => drain)).pipe(Layer.provideMerge(serving))
}

export const serverPort = (server: HttpServer.HttpServer): number =>
  server.address._tag === "TcpAddress" ? server.address.port : 0
