/**
 * The HTTP server as a layer: node:http with the app as its request listener. Each request
 * is one fiber of the app (no per-request router, tracer span or header wrapper) and one
 * timer, its deadline; its answer is written in one call with its headers.
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import { Context, Data, Effect, Exit, Layer, Runtime } from "effect"
import { type AppOptions, type AppServices, makeApp, type RequestFacts } from "./app.js"
import { toIncomingRequest } from "./request.js"
import type { Reply } from "./responses.js"

export interface ListenOptions extends AppOptions {
  /** 0 picks a free port (tests). */
  readonly port: number
  readonly host?: string
  /** How long a stopping server waits for the requests in flight (default 10 s). */
  readonly shutdownTimeoutMs?: number
}

export const SHUTDOWN_TIMEOUT_MS = 10_000

/** The listening server: its port (0 asked for a free one; this is the one it got). */
export class ListeningServer extends Context.Tag("@intake/server/ListeningServer")<
  ListeningServer,
  { readonly port: number }
>() {}

/** The server could not listen (the port is taken, or needs privileges). */
export class ListenFailed extends Data.TaggedError("ListenFailed")<{ readonly cause: unknown }> {}

const requestIdOf = () => `req_${randomUUID().replaceAll("-", "")}`

/** Writes a reply in one call: status, headers and the whole body. */
const send = (response: ServerResponse, reply: Reply) => {
  if (response.headersSent || response.destroyed) return
  const headers: Record<string, string | number> = { ...reply.headers }
  headers["content-length"] =
    typeof reply.body === "string" ? Buffer.byteLength(reply.body) : reply.body.byteLength
  response.writeHead(reply.status, headers)
  response.end(reply.body)
}

/**
 * Serves the app. Needs the use cases and the Crypto port (the services of
 * handlers-v1.ts and handlers-admin.ts); provides ListeningServer. Closing the layer
 * (SIGTERM, SIGINT) stops accepting, closes idle connections, lets the requests in flight
 * finish (within `shutdownTimeoutMs`), then closes every connection left, before the
 * services close.
 */
export const serverLayer = (options: ListenOptions) =>
  Layer.scoped(
    ListeningServer,
    Effect.gen(function* () {
      const app = makeApp(options)
      const runtime = yield* Effect.runtime<AppServices>()
      const run = Runtime.runCallback(runtime)
      const inFlight = new Set<ServerResponse>()
      let onSettled: (() => void) | undefined

      /**
       * One request: its fiber, and one timer for its deadline. Past the deadline the
       * answer is the app's deadline answer; the work is interrupted and winds down in the
       * background (an interrupted query is cancelled; a ROLLBACK may itself wait on a
       * silent connection).
       */
      const onRequest = (message: IncomingMessage, response: ServerResponse) => {
        const startedAt = performance.now()
        const request = toIncomingRequest(message)
        const facts: RequestFacts = {
          requestId: requestIdOf(),
          route: undefined,
          workspaceId: undefined,
          keyId: undefined,
          decision: undefined
        }
        let answered = false
        inFlight.add(response)
        const timer = setTimeout(() => {
          if (answered) return
          answered = true
          cancel()
          run(app.deadlineExceeded(request, facts, startedAt), {
            onExit: (exit) => {
              if (Exit.isSuccess(exit)) send(response, exit.value)
            }
          })
        }, app.timeoutMs)
        const cancel = run(app.answer(request, facts, startedAt), {
          onExit: (exit) => {
            if (answered) return
            answered = true
            clearTimeout(timer)
            // The app never fails; an interruption (the client went away) has no one to answer.
            if (Exit.isSuccess(exit)) send(response, exit.value)
          }
        })
        response.once("close", () => {
          inFlight.delete(response)
          if (!answered) {
            // The client went away before the answer: so does the work.
            answered = true
            clearTimeout(timer)
            cancel()
          }
          onSettled?.()
        })
      }

      const server: Server = createServer(onRequest)
      yield* Effect.async<void, ListenFailed>((resume) => {
        const onError = (cause: Error) => resume(Effect.fail(new ListenFailed({ cause })))
        server.once("error", onError)
        server.listen(options.port, options.host, () => {
          server.off("error", onError)
          resume(Effect.void)
        })
      })

      const drain = Effect.async<void>((resume) => {
        if (!server.listening) return resume(Effect.void)
        server.close()
        server.closeIdleConnections()
        let done = false
        const finish = () => {
          if (done) return
          done = true
          onSettled = undefined
          clearTimeout(timer)
          server.closeAllConnections()
          resume(Effect.void)
        }
        const timer = setTimeout(finish, options.shutdownTimeoutMs ?? SHUTDOWN_TIMEOUT_MS)
        onSettled = () => {
          // A finished response leaves its keep-alive connection idle: nothing more comes on it.
          server.closeIdleConnections()
          if (inFlight.size === 0) finish()
        }
        if (inFlight.size === 0) finish()
        return Effect.sync(finish)
      })
      yield* Effect.addFinalizer(() => drain)
      return { port: (server.address() as AddressInfo).port }
    })
  )
