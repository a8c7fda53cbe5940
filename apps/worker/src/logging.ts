/**
 * The processes' logs: one JSON object per line on stdout, through Effect's logger, at
 * the level LOG_LEVEL asks for. A log whose message is a plain object (a request, a
 * delivery attempt) has its fields at the top level of the line, beside the level and
 * the time, so a log pipeline can filter on them without unpacking a nested message.
 */
import {
  Config,
  ConfigError,
  Either,
  FiberRef,
  FiberRefs,
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

/** Effect's structured logger, flattened into one JSON line, with the request id when there is one. */
export const jsonLineLogger = Logger.make<unknown, string>((options) => {
  const log = Logger.structuredLogger.log(options)
  const { message, logLevel, timestamp, cause, annotations } = log
  const line: Record<string, unknown> = { level: logLevel.toLowerCase(), time: timestamp }
  if (isPlainObject(message)) Object.assign(line, message)
  else line.message = message instanceof Error ? { name: message.name, message: message.message } : message
  Object.assign(line, annotations)
  const requestId = FiberRefs.getOrDefault(options.context, CurrentRequestId)
  if (requestId !== undefined && line.requestId === undefined) line.requestId = requestId
  if (cause !== undefined) line.cause = cause
  return Inspectable.stringifyCircular(line)
})

/** Replaces the default logger with the JSON lines on stdout, at `level` and above. */
export const loggingLayer = (level: LogLevel.LogLevel) =>
  Layer.merge(
    Logger.replace(Logger.defaultLogger, Logger.withConsoleLog(jsonLineLogger)),
    Logger.minimumLogLevel(level)
  )
