/**
 * The HTTP server as a layer: node:http with the app as its request listener. Each request
 * is one fiber of the app (no per-request router, tracer span or header wrapper) and one
 * timer, its deadline; its answer is written in one call with its headers.
 */
import { randomUUID } from "node:crypto"
import {
  createServer,
  type IncomingMessage,
  maxHeaderSize,
  type Server,
  type ServerResponse,
  STATUS_CODES
} from "node:http"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import type { Duplex } from "node:stream"
import { invalid } from "@intake/domain"
import { CurrentRequestId, Metrics, RequestLogWriter, untrackRootFibers } from "@intake/node"
import {
  Context,
  Data,
  Duration,
  Effect,
  Exit,
  type Fiber,
  FiberRef,
  Layer,
  Option,
  Runtime,
  Scheduler
} from "effect"
import { type AppOptions, type AppServices, countedRequestLog, makeApp, type RequestFacts } from "./app.js"
import { BodyReadTimeout, bodyAbandoned, DEFAULT_BODY_TIMEOUT } from "./body.js"
import { toIncomingRequest } from "./request.js"
import { errorResponse, type Reply, withHeader } from "./responses.js"

export interface ListenOptions extends AppOptions {
  /** 0 picks a free port (tests). */
  readonly port: number
  readonly host?: string
  /** How long a stopping server waits for the requests in flight (default 10 s). */
  readonly shutdownTimeoutMs?: number
  /**
   * INTAKE_SHUTDOWN_DRAIN: how long a stopping server keeps serving, /readyz answering 503
   * and every answer closing its connection, before it stops accepting (default 0: at once).
   */
  readonly shutdownDrain?: Duration.DurationInput
  /** INTAKE_BODY_TIMEOUT: how long a request body may take to arrive (default 10 s). */
  readonly bodyTimeout?: Duration.DurationInput
  /** Node's `headersTimeout` (default 60 s): tests shorten it. */
  readonly headersTimeoutMs?: number
}

export const SHUTDOWN_TIMEOUT_MS = 10_000

/** The listening server: its port (0 asked for a free one; this is the one it got). */
export class ListeningServer extends Context.Tag("@intake/server/ListeningServer")<
  ListeningServer,
  { readonly port: number }
>() {}

/** The server could not listen (the port is taken, or needs privileges). */
export class ListenFailed extends Data.TaggedError("ListenFailed")<{ readonly cause: unknown }> {}

/** An X-Request-Id a client may choose: 1 to 128 of [A-Za-z0-9._-] (docs/rules.md, Request ids). */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/

/** The client's X-Request-Id when it has a safe shape, else a new one. */
const requestIdOf = (given?: string | ReadonlyArray<string>) =>
  typeof given === "string" && SAFE_REQUEST_ID.test(given) ? given : `req_${randomUUID().replaceAll("-", "")}`

/**
 * The scheduler of request fibers (docs/choices.md, Performance at the edge): a fiber
 * resumed by a callback (a statement's answer, a body's end, Redis's reply) runs on at
 * once, in that callback, where Effect's default scheduler would queue it for a microtask
 * (a create resumes about ten times). Whatever is scheduled while such a run is under way
 * (another fiber resumed, a fiber yielding after its budget of steps) goes to the default
 * scheduler, so runs never nest and a yield still yields.
 */
export class RequestScheduler implements Scheduler.Scheduler {
  private running = false
  scheduleTask(task: Scheduler.Task, priority: number, fiber?: Fiber.RuntimeFiber<unknown, unknown>) {
    if (this.running) return Scheduler.defaultScheduler.scheduleTask(task, priority, fiber)
    this.running = true
    try {
      task()
    } finally {
      this.running = false
    }
  }
  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    return Scheduler.defaultScheduler.shouldYield(fiber)
  }
}

/**
 * Writes a reply in one call: status, headers and the whole body. `closeConnection` adds
 * `Connection: close`, and node closes the connection once the answer is written.
 */
const send = (response: ServerResponse, reply: Reply, closeConnection: boolean) => {
  if (response.headersSent || response.destroyed) return
  const headers: Record<string, string | number> = { ...reply.headers }
  headers["content-length"] =
    typeof reply.body === "string" ? Buffer.byteLength(reply.body) : reply.body.byteLength
  if (closeConnection) headers.connection = "close"
  response.writeHead(reply.status, headers)
  response.end(reply.body)
}

/** The 400 for a request node's parser refused, or one without Host: its issue names what was wrong. */
const malformedRequest = (path: string, message: string, requestId: string) =>
  withHeader(errorResponse(invalid([{ path, message }])), "x-request-id", requestId)

/** What node's HTTP parser refused, as an issue (docs/choices.md, HTTP). */
const parserIssue = (code: string | undefined): { path: string; message: string } => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return {
        path: "headers",
        message: `the request line and headers are larger than ${maxHeaderSize} bytes`
      }
    case "HPE_INVALID_METHOD":
      return { path: "method", message: "the request method is not an HTTP method" }
    case "HPE_INVALID_URL":
      return { path: "target", message: "the request target is not a valid path" }
    case "HPE_INVALID_VERSION":
      return { path: "version", message: "the HTTP version is not supported (send HTTP/1.1)" }
    case "HPE_INVALID_HEADER_TOKEN":
      return { path: "headers", message: "a header name or value holds characters HTTP does not allow" }
    case "HPE_INVALID_CONTENT_LENGTH":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
    case "HPE_INVALID_TRANSFER_ENCODING":
    case "HPE_INVALID_CHUNK_SIZE":
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return {
        path: "body",
        message: "the body's framing (Content-Length, Transfer-Encoding, chunks) is not valid"
      }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { path: "request", message: "the request did not arrive in time" }
    default:
      return { path: "request", message: "the request is not valid HTTP/1.1" }
  }
}

/** A reply as the bytes of a whole HTTP/1.1 answer that closes its connection. */
const rawAnswer = (reply: Reply) => {
  const body = Buffer.from(reply.body)
  const head = [`HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? ""}`]
  for (const [name, value] of Object.entries(reply.headers)) head.push(`${name}: ${value}`)
  head.push(`content-length: ${body.byteLength}`, `date: ${new Date().toUTCString()}`, "connection: close")
  return Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"), body])
}

/**
 * Serves the app. Needs the use cases and the Crypto port (the services of
 * handlers-v1.ts and handlers-admin.ts); provides ListeningServer. Closing the layer
 * (SIGTERM, SIGINT) first drains for `shutdownDrain` (docs/choices.md, Operations): requests
 * are still served, /readyz answers 503 so the load balancer stops sending, and every
 * answer carries `Connection: close` so keep-alive clients reconnect elsewhere. Then it
 * stops accepting, closes idle connections, lets the requests in flight finish (within
 * `shutdownTimeoutMs`), then closes every connection left, before the services close.
 */
export const serverLayer = (options: ListenOptions) =>
  Layer.scoped(
    ListeningServer,
    Effect.gen(function* () {
      untrackRootFibers()
      const runtime = yield* Effect.runtime<AppServices>()
      const writeRequestLog = Context.get(runtime.context, RequestLogWriter)
      const app = makeApp(
        options,
        Option.match(yield* Effect.serviceOption(Metrics), {
          onNone: () => writeRequestLog,
          onSome: (metrics) => countedRequestLog(metrics, writeRequestLog)
        })
      )
      const run = Runtime.runCallback(
        Runtime.setFiberRef(
          Runtime.provideService(
            runtime,
            BodyReadTimeout,
            Duration.toMillis(options.bodyTimeout ?? DEFAULT_BODY_TIMEOUT)
          ),
          FiberRef.currentScheduler,
          new RequestScheduler()
        )
      )
      // A count, not a set of the responses: like Effect's set of root fibers
      // (fiber-roots.ts), a set of them kept ended requests alive through scavenges.
      let inFlight = 0
      let onSettled: (() => void) | undefined
      /** Set when the server is told to stop: every answer from then on closes its connection. */
      let draining = false

      /**
       * One request: its fiber, and one timer for its deadline. Past the deadline the
       * answer is the app's deadline answer; the work is interrupted and winds down in the
       * background (an interrupted query is cancelled; a ROLLBACK may itself wait on a
       * silent connection).
       */
      const onRequest = (message: IncomingMessage, response: ServerResponse) => {
        const startedAt = performance.now()
        const requestId = requestIdOf(message.headers["x-request-id"])
        // Node's own check answers a bare 400; this one answers in the envelope (createServer below).
        if (message.headers.host === undefined && message.httpVersion === "1.1") {
          send(response, malformedRequest("Host", "the Host header is required in HTTP/1.1", requestId), true)
          return
        }
        const request = toIncomingRequest(message)
        const facts: RequestFacts = {
          requestId,
          route: undefined,
          workspaceId: undefined,
          keyId: undefined,
          decision: undefined
        }
        let answered = false
        inFlight++
        const timer = setTimeout(() => {
          if (answered) return
          answered = true
          cancel()
          run(app.deadlineExceeded(request, facts, startedAt), {
            onExit: (exit) => {
              if (Exit.isSuccess(exit)) send(response, exit.value, draining || bodyAbandoned(message))
            }
          })
        }, app.timeoutMs)
        const cancel = run(app.answer(request, facts, startedAt), {
          onExit: (exit) => {
            if (answered) return
            answered = true
            clearTimeout(timer)
            // The app never fails; an interruption (the client went away) has no one to answer.
            if (Exit.isSuccess(exit)) send(response, exit.value, draining || bodyAbandoned(message))
          }
        })
        response.once("close", () => {
          inFlight--
          if (!answered) {
            // The client went away before the answer: so does the work.
            answered = true
            clearTimeout(timer)
            cancel()
          }
          onSettled?.()
        })
      }

      /**
       * What node's parser refused (oversized headers or target, a bad method, a header
       * timeout...) answers 400 in the envelope with an X-Request-Id, then the connection
       * closes. Nothing is written on a socket that cannot take it or whose answer has begun
       * (a reset, a parse error behind a request being answered); it never throws.
       */
      const onClientError = (error: Error & { readonly code?: string }, socket: Duplex) => {
        try {
          const pending = (socket as Duplex & { readonly _httpMessage?: ServerResponse | null })._httpMessage
          if (!socket.writable || error.code === "ECONNRESET" || pending?.headersSent === true) {
            socket.destroy()
            return
          }
          const requestId = requestIdOf()
          const issue = parserIssue(error.code)
          socket.end(rawAnswer(malformedRequest(issue.path, issue.message, requestId)), () =>
            socket.destroy()
          )
          run(
            Effect.zipRight(
              FiberRef.set(CurrentRequestId, requestId),
              Effect.logInfo({
                message: "malformed request",
                requestId,
                status: 400,
                reason: error.code ?? null
              })
            )
          )
        } catch {
          socket.destroy()
        }
      }

      const server: Server = createServer(
        {
          // Answered by onRequest in the envelope instead.
          requireHostHeader: false,
          ...(options.headersTimeoutMs === undefined
            ? {}
            : {
                headersTimeout: options.headersTimeoutMs,
                connectionsCheckingInterval: Math.min(30_000, Math.max(10, options.headersTimeoutMs / 4))
              })
        },
        onRequest
      )
      server.on("clientError", onClientError)
      yield* Effect.async<void, ListenFailed>((resume) => {
        const onError = (cause: Error) => resume(Effect.fail(new ListenFailed({ cause })))
        server.once("error", onError)
        server.listen(options.port, options.host, () => {
          server.off("error", onError)
          resume(Effect.void)
        })
      })

      const drainMs = Duration.toMillis(options.shutdownDrain ?? Duration.zero)
      const startDraining = Effect.suspend(() => {
        if (!server.listening) return Effect.void
        draining = true
        app.startDraining()
        if (drainMs === 0) return Effect.void
        return Effect.zipRight(
          Effect.logInfo({ message: "stopping: draining before closing the listener", drainMs }),
          Effect.sleep(drainMs)
        )
      })
      const stop = Effect.async<void>((resume) => {
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
          if (inFlight === 0) finish()
        }
        if (inFlight === 0) finish()
        return Effect.sync(finish)
      })
      yield* Effect.addFinalizer(() => Effect.zipRight(startDraining, stop))
      return { port: (server.address() as AddressInfo).port }
    })
  )
