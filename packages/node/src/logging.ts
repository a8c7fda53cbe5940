/**
 * The processes' logs: one JSON object per line on stdout, through Effect's logger, at
 * the level LOG_LEVEL asks for. A log whose message is a plain object (a request, a
 * delivery attempt) has its fields at the top level of the line, beside the level and
 * the time, so a log pipeline can filter on them without unpacking a nested message.
 */
import { WireShapes } from "@intake/domain/internal"
import {
  Cause,
  Config,
  ConfigError,
  Console,
  Context,
  Effect,
  Either,
  FiberRef,
  FiberRefs,
  HashMap,
  Inspectable,
  Layer,
  Logger,
  LogLevel
} from "effect"

export const LOG_LEVELS = {
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  // The name the lines themselves carry ("level":"warn"), so an operator can copy it back.
  warn: LogLevel.Warning,
  error: LogLevel.Error,
  none: LogLevel.None
} as const

export type LogLevelName = keyof typeof LOG_LEVELS

/** LOG_LEVEL: debug, info (default), warning (or warn), error or none. */
export const logLevelConfig: Config.Config<LogLevel.LogLevel> = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((text) => {
    const level = LOG_LEVELS[text.trim().toLowerCase() as LogLevelName]
    return level === undefined
      ? Either.left(
          ConfigError.InvalidData(["LOG_LEVEL"], `must be one of ${Object.keys(LOG_LEVELS).join(", ")}`)
        )
      : Either.right(level)
  })
)

const { isoTimestamp } = WireShapes

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype

/**
 * The id of the request a fiber works for: set once at the start of a request's fiber (a
 * plain set, where an annotation scope would cost a map update and its undoing on every
 * request), and written by the logger on every line that fiber logs.
 */
export const CurrentRequestId = FiberRef.unsafeMake<string | undefined>(undefined)

/** Level names as the lines write them (Effect's own, lower-cased once). */
const levelNames = new Map<string, string>()
const levelName = (level: LogLevel.LogLevel) => {
  let name = levelNames.get(level.label)
  if (name === undefined) {
    name = level.label.toLowerCase()
    levelNames.set(level.label, name)
  }
  return name
}

/** A line as JSON: a message with a cycle or a BigInt in Effect's own safe rendering. */
const stringifyLine = (line: Record<string, unknown>) => {
  try {
    return JSON.stringify(line)
  } catch {
    return Inspectable.stringifyCircular(line)
  }
}

/**
 * One JSON line per log: level, time, the message's fields at the top level when it is a
 * plain object (a request, a delivery attempt) or `message` otherwise, the annotations, the
 * request id when the fiber works for one, and the cause rendered as text. Built directly
 * (Effect's structured logger renders spans and every annotation into a second object
 * first, a cost a per-request line pays on every request).
 */
export const jsonLineLogger = Logger.make<unknown, string>(
  ({ message, logLevel, date, cause, annotations, context }) => {
    const line: Record<string, unknown> = { level: levelName(logLevel), time: isoTimestamp(date.getTime()) }
    const single = Array.isArray(message) && message.length === 1 ? message[0] : message
    if (isPlainObject(single)) Object.assign(line, single)
    else line.message = single instanceof Error ? { name: single.name, message: single.message } : single
    if (HashMap.size(annotations) > 0) for (const [key, value] of annotations) line[key] = value
    const requestId = FiberRefs.getOrDefault(context, CurrentRequestId)
    if (requestId !== undefined && line.requestId === undefined) line.requestId = requestId
    if (!Cause.isEmpty(cause)) line.cause = Cause.pretty(cause, { renderErrorCause: true })
    return stringifyLine(line)
  }
)

/** Writes one request's log line: its fields, at info. */
export type RequestLogWrite = (fields: Record<string, unknown>) => Effect.Effect<void>

/**
 * How the server writes a request's log line. By default through `Effect.logInfo`, so any
 * logger the runtime has sees it. Under loggingLayer, straight to its stdout sink as the
 * line jsonLineLogger writes for the same fields at info (docs/performance.md, Logging):
 * Effect's log call copies the fiber's refs, walks its loggers and builds a Date
 * per line, about a third of what a request line cost. A request fiber has no annotations
 * and no cause to write; its id is one of the fields.
 */
export class RequestLogWriter extends Context.Reference<RequestLogWriter>()("@intake/node/RequestLogWriter", {
  defaultValue: (): RequestLogWrite => (fields) => Effect.logInfo(fields)
}) {}

/**
 * How long a line may wait for others before they leave in one write (docs/performance.md,
 * Logging).
 */
export const LOG_FLUSH_DELAY_MS = 50
/** Pending lines of this many characters leave at once, whatever the delay. */
export const LOG_FLUSH_CHARS = 64 * 1024

/**
 * Lines on stdout, gathered for at most LOG_FLUSH_DELAY_MS (or LOG_FLUSH_CHARS) and written
 * in one call: a write to a file or a pipe is a system call on the event loop's thread, and
 * under load one per turn cost more than building the lines (docs/performance.md, Logging).
 * What is pending is written when the layer closes and, failing that, before
 * the process exits.
 */
const makeStdoutSink = () => {
  let pending: Array<string> = []
  let chars = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    if (timer !== undefined) {
      clearTimeout(timer)
      timer = undefined
    }
    if (pending.length === 0) return
    const text = `${pending.join("\n")}\n`
    pending = []
    chars = 0
    process.stdout.write(text)
  }
  let closed = false
  const write = (line: string) => {
    // A line logged after the layer closed (a fiber that outlived it) leaves at once.
    if (closed) {
      process.stdout.write(`${line}\n`)
      return
    }
    pending.push(line)
    chars += line.length
    if (chars >= LOG_FLUSH_CHARS) flush()
    else if (timer === undefined) {
      timer = setTimeout(flush, LOG_FLUSH_DELAY_MS)
      // The exit hook and the layer's finalizer write what is pending: the timer keeps no process alive.
      timer.unref()
    }
  }
  const close = () => {
    flush()
    closed = true
  }
  return { write, flush, close }
}

/**
 * The console, writing after the log lines still pending: what a process prints itself (the
 * demo banner after "Intake listening") keeps its place among its log lines.
 */
const inOrder = (console: Console.Console, sink: { readonly flush: () => void }): Console.Console => {
  const flushed =
    <Args extends Array<unknown>>(print: (...args: Args) => Effect.Effect<void>) =>
    (...args: Args) =>
      Effect.zipRight(Effect.sync(sink.flush), print(...args))
  return {
    ...console,
    log: flushed(console.log),
    info: flushed(console.info),
    warn: flushed(console.warn),
    error: flushed(console.error),
    debug: flushed(console.debug),
    trace: flushed(console.trace),
    table: flushed(console.table),
    dir: flushed(console.dir)
  }
}

/**
 * Replaces the default logger with the JSON lines on stdout, at `level` and above. Effect's
 * tracer logger goes too: it copies each log into the current span, and no span is
 * exported here, so it was work for nothing on every line. The console writes after the
 * pending lines (`inOrder`). Request lines go to the same sink directly (RequestLogWriter).
 */
export const loggingLayer = (level: LogLevel.LogLevel) =>
  Layer.mergeAll(
    Layer.unwrapScoped(
      Effect.map(
        Effect.acquireRelease(
          Effect.sync(() => {
            const sink = makeStdoutSink()
            process.once("exit", sink.flush)
            return sink
          }),
          (sink) =>
            Effect.sync(() => {
              sink.close()
              process.removeListener("exit", sink.flush)
            })
        ),
        (sink) =>
          Layer.mergeAll(
            Logger.replace(Logger.defaultLogger, Logger.map(jsonLineLogger, sink.write)),
            Layer.succeed(
              RequestLogWriter,
              LogLevel.greaterThan(level, LogLevel.Info)
                ? () => Effect.void
                : (fields) =>
                    Effect.sync(() =>
                      sink.write(stringifyLine({ level: "info", time: isoTimestamp(Date.now()), ...fields }))
                    )
            ),
            Layer.unwrapEffect(
              Effect.map(Effect.console, (console) => Console.setConsole(inOrder(console, sink)))
            )
          )
      )
    ),
    Logger.remove(Logger.tracerLogger),
    Logger.minimumLogLevel(level)
  )
