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
import { type AddressInfo, Server as NetServer, type Socket } from "node:net"
import { performance } from "node:perf_hooks"
import type { Duplex } from "node:stream"
import { invalid, TraceContext } from "@intake/domain"
import { Metrics } from "@intake/node"
import { CurrentRequestId, RequestLogWriter, untrackRootFibers } from "@intake/node/internal"
import { Context, Data, Duration, Effect, Exit, FiberRef, Layer, Option, Runtime } from "effect"
import { type AppOptions, type AppServices, makeApp } from "./app.js"
import { BodyReadTimeout, bodyAbandoned, DEFAULT_BODY_TIMEOUT, MAX_BODY_BYTES } from "./body.js"
import { type IncomingRequest, toIncomingRequest } from "./request.js"
import { countedRequestLog, type RequestFacts } from "./request-log.js"
import { errorResponse, type Reply } from "./responses.js"
import { RequestScheduler } from "./scheduler.js"

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
  /**
   * INTAKE_HEADERS_TIMEOUT: how long a connection may take to send a request's line and
   * headers, a new connection's first one included (default 10 s).
   */
  readonly headersTimeoutMs?: number
  /** INTAKE_IDLE_TIMEOUT: how long a keep-alive connection may wait for its next request (default 5 s). */
  readonly idleTimeoutMs?: number
  /** The admission bounds (docs/rules.md, Overload); each has a default that fits a small instance. */
  readonly admission?: Partial<AdmissionBounds>
}

/** Past these a request is shed before its body is read (429 with Retry-After; docs/rules.md, Overload). */
export interface AdmissionBounds {
  /**
   * INTAKE_MAX_CONNECTIONS: a connection opened while this many are open has its requests
   * shed, and is closed, as long as more than this many are open (those opened earlier are
   * served); at twice as many, new connections are closed unanswered.
   */
  readonly maxConnections: number
  /** INTAKE_MAX_REQUESTS_IN_FLIGHT: requests being answered at once. */
  readonly maxRequestsInFlight: number
  /**
   * INTAKE_MAX_BODY_BYTES_IN_FLIGHT: the bodies of the requests being answered, by their
   * Content-Length (a chunked body counts as the largest allowed, 1 MB).
   */
  readonly maxBodyBytesInFlight: number
}

export const DEFAULT_ADMISSION: AdmissionBounds = {
  maxConnections: 1_024,
  maxRequestsInFlight: 256,
  maxBodyBytesInFlight: 16 * MAX_BODY_BYTES
}

export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000
export const DEFAULT_IDLE_TIMEOUT_MS = 5_000

export const SHUTDOWN_TIMEOUT_MS = 10_000

/**
 * When the server stops accepting, how long a connection it accepted has to begin a request
 * (answered, with `Connection: close`) before it is closed as idle.
 */
const STOP_IDLE_GRACE_MS = 1_000

/** The listening server: its port (0 asked for a free one; this is the one it got). */
export class ListeningServer extends Context.Tag("@intake/server/ListeningServer")<
  ListeningServer,
  { readonly port: number }
>() {}

/** The server could not listen (the port is taken, or needs privileges). */
export class ListenFailed extends Data.TaggedError("ListenFailed")<{ readonly cause: unknown }> {}

/** An X-Request-Id a client may choose: 1 to 128 of [A-Za-z0-9._-] (docs/operations.md, Request ids). */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/

/** The client's X-Request-Id when it has a safe shape, else a new one. */
const requestIdOf = (given?: string | ReadonlyArray<string>) =>
  typeof given === "string" && SAFE_REQUEST_ID.test(given) ? given : `req_${randomUUID().replaceAll("-", "")}`

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
const malformedRequest = (path: string, message: string) => errorResponse(invalid([{ path, message }]))

/** What a request's body will hold at most, by its framing: none, its Content-Length, or (chunked) the limit. */
const declaredBodyBytes = (message: IncomingMessage) => {
  const declared = message.headers["content-length"]
  if (declared !== undefined) return Math.min(Number(declared) || 0, MAX_BODY_BYTES)
  return message.headers["transfer-encoding"] === undefined ? 0 : MAX_BODY_BYTES
}

/** The probes a load balancer sends: never shed, so an overloaded server still shows it is alive. */
const isProbe = (pathname: string) => pathname === "/healthz" || pathname === "/readyz"

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
        }),
        // docs/operations.md, Traces: read once; off, the requests carry nothing of it.
        Option.getOrUndefined(yield* Effect.serviceOption(TraceContext.Tracing))
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
      /** The declared bodies of the requests in flight, in bytes (AdmissionBounds). */
      let bodyBytesInFlight = 0
      let onSettled: (() => void) | undefined
      /** Set when the server is told to stop: every answer from then on closes its connection. */
      let draining = false
      const bounds: AdmissionBounds = { ...DEFAULT_ADMISSION, ...options.admission }
      /** The open connections (per connection, never per request); their count is the connection bound's. */
      const connections = new Set<Socket>()
      /** Connections opened past the connection bound: their requests are shed. */
      const pastBound = new WeakSet<Socket>()

      /**
       * A request past an admission bound, answered before its body is read: 429 with
       * Retry-After, and its connection closed (the unread body with it).
       */
      const shed = (
        request: IncomingRequest,
        response: ServerResponse,
        facts: RequestFacts,
        startedAt: number
      ) => {
        inFlight++
        response.once("close", () => {
          inFlight--
          onSettled?.()
        })
        run(app.shed(request, facts, startedAt), {
          onExit: (exit) => {
            if (Exit.isSuccess(exit)) send(response, exit.value, true)
            else response.destroy()
          }
        })
      }

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
          run(
            app.answerMalformed(
              malformedRequest("Host", "the Host header is required in HTTP/1.1"),
              requestId,
              message.socket.remoteAddress
            ),
            {
              onExit: (exit) => (Exit.isSuccess(exit) ? send(response, exit.value, true) : response.destroy())
            }
          )
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
        // Admission (docs/rules.md, Overload): counters only, on the common path.
        const bodyBytes = declaredBodyBytes(message)
        if (
          (inFlight >= bounds.maxRequestsInFlight ||
            bodyBytesInFlight + bodyBytes > bounds.maxBodyBytesInFlight ||
            (connections.size > bounds.maxConnections && pastBound.has(message.socket))) &&
          !isProbe(request.pathname)
        ) {
          shed(request, response, facts, startedAt)
          return
        }
        let answered = false
        inFlight++
        bodyBytesInFlight += bodyBytes
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
          bodyBytesInFlight -= bodyBytes
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
          run(
            Effect.zipRight(
              FiberRef.set(CurrentRequestId, requestId),
              Effect.zipLeft(
                app.answerMalformed(
                  malformedRequest(issue.path, issue.message),
                  requestId,
                  (socket as Socket).remoteAddress
                ),
                Effect.logInfo({
                  message: "malformed request",
                  requestId,
                  status: 400,
                  reason: error.code ?? null
                })
              )
            ),
            {
              onExit: (exit) => {
                // The client may have gone while the limiter answered.
                if (Exit.isFailure(exit) || !socket.writable) socket.destroy()
                else socket.end(rawAnswer(exit.value), () => socket.destroy())
              }
            }
          )
        } catch {
          socket.destroy()
        }
      }

      const headersTimeoutMs = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS
      const server: Server = createServer(
        {
          // Answered by onRequest in the envelope instead.
          requireHostHeader: false,
          headersTimeout: headersTimeoutMs,
          // Node looks for late headers this often: a slow client goes within a quarter more.
          connectionsCheckingInterval: Math.min(1_000, Math.max(10, headersTimeoutMs / 4)),
          keepAliveTimeout: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
        },
        onRequest
      )
      server.on("clientError", onClientError)
      // Node answers an Expect it does not know with a bare 417: this answers in the envelope.
      server.on("checkExpectation", (message: IncomingMessage, response: ServerResponse) =>
        run(
          app.answerMalformed(
            malformedRequest("Expect", "the Expect header supports only 100-continue"),
            requestIdOf(),
            message.socket.remoteAddress
          ),
          { onExit: (exit) => (Exit.isSuccess(exit) ? send(response, exit.value, true) : response.destroy()) }
        )
      )
      // Past twice the bound, node closes a new connection as soon as it is accepted.
      server.maxConnections = bounds.maxConnections * 2
      server.on("connection", (socket: Socket) => {
        connections.add(socket)
        if (connections.size > bounds.maxConnections) pastBound.add(socket)
        socket.once("close", () => {
          connections.delete(socket)
          onSettled?.()
        })
      })
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
      /**
       * Stops accepting, then lets every accepted connection end cleanly (docs/choices.md,
       * Operations): a request in flight, or one that begins within a second, is answered
       * with `Connection: close`; a connection idle after that second is closed (a FIN: nothing
       * it sent is left unread). None is reset, unless the shutdown bound runs out.
       */
      const stop = Effect.async<void>((resume) => {
        if (!server.listening) return resume(Effect.void)
        let done = false
        let graceOver = false
        const finish = () => {
          if (done) return
          done = true
          onSettled = undefined
          clearTimeout(timer)
          clearTimeout(grace)
          server.closeAllConnections()
          resume(Effect.void)
        }
        const settle = () => {
          // A connection whose answer closed it is gone; one left idle after the grace goes now.
          if (graceOver) server.closeIdleConnections()
          if (connections.size === 0 && inFlight === 0) finish()
        }
        // After this turn's accepts: what the kernel completed and node has not yet taken
        // would be reset with the listener. Closed as a plain net server: http's own close()
        // also closes every idle keep-alive connection at once, one whose next request is on
        // its way included.
        setImmediate(() => {
          NetServer.prototype.close.call(server)
          onSettled = settle
          settle()
        })
        const grace = setTimeout(() => {
          graceOver = true
          settle()
        }, STOP_IDLE_GRACE_MS)
        const timer = setTimeout(finish, options.shutdownTimeoutMs ?? SHUTDOWN_TIMEOUT_MS)
        return Effect.sync(finish)
      })
      yield* Effect.addFinalizer(() => Effect.zipRight(startDraining, stop))
      return { port: (server.address() as AddressInfo).port }
    })
  )
