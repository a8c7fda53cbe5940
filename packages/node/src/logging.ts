/**
 * The processes' logs: one JSON object per line on stdout, through Effect's logger, at
 * the level LOG_LEVEL asks for. A log whose message is a plain object (a request, a
 * delivery attempt) has its fields at the top level of the line, beside the level and
 * the time, so a log pipeline can filter on them without unpacking a nested message.
 */
import {
  Cause,
  Config,
  ConfigError,
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

/**
 * One JSON line per log: level, time, the message's fields at the top level when it is a
 * plain object (a request, a delivery attempt) or `message` otherwise, the annotations, the
 * request id when the fiber works for one, and the cause rendered as text. Built directly
 * (Effect's structured logger renders spans and every annotation into a second object
 * first, a cost a per-request line pays on every request).
 */
export const jsonLineLogger = Logger.make<unknown, string>(
  ({ message, logLevel, date, cause, annotations, context }) => {
    const line: Record<string, unknown> = { level: levelName(logLevel), time: date.toISOString() }
    const single = Array.isArray(message) && message.length === 1 ? message[0] : message
    if (isPlainObject(single)) Object.assign(line, single)
    else line.message = single instanceof Error ? { name: single.name, message: single.message } : single
    if (HashMap.size(annotations) > 0) for (const [key, value] of annotations) line[key] = value
    const requestId = FiberRefs.getOrDefault(context, CurrentRequestId)
    if (requestId !== undefined && line.requestId === undefined) line.requestId = requestId
    if (!Cause.isEmpty(cause)) line.cause = Cause.pretty(cause, { renderErrorCause: true })
    try {
      return JSON.stringify(line)
    } catch {
      // A message with a cycle or a BigInt: Effect's own safe rendering.
      return Inspectable.stringifyCircular(line)
    }
  }
)

/**
 * Lines on stdout, written once per turn of the event loop: under load a request's line
 * joins the others of its turn in one write instead of costing a write of its own. What is
 * pending is written before the process exits.
 */
const makeStdoutSink = () => {
  let pending: Array<string> = []
  const flush = () => {
    if (pending.length === 0) return
    const text = `${pending.join("\n")}\n`
    pending = []
    process.stdout.write(text)
  }
  process.once("exit", flush)
  return (line: string) => {
    if (pending.length === 0) setImmediate(flush)
    pending.push(line)
  }
}

/** Replaces the default logger with the JSON lines on stdout, at `level` and above. */
export const loggingLayer = (level: LogLevel.LogLevel) =>
  Layer.merge(
    Layer.suspend(() => Logger.replace(Logger.defaultLogger, Logger.map(jsonLineLogger, makeStdoutSink()))),
    Logger.minimumLogLevel(level)
  )
