/**
 * The one way tests capture what the code logs: `captureLogs()` gives a layer that replaces
 * Effect's default logger and keeps every line in memory instead of printing it, and the
 * readings the assertions use (a level and message, the JSON line `pnpm start` prints).
 */
import { jsonLineLogger } from "@intake/node"
import { type Layer, Logger } from "effect"

/** One captured line. */
export interface CapturedLine {
  /** Effect's level label: "DEBUG", "INFO", "WARN", "ERROR"… */
  readonly level: string
  /** What was logged first (Effect.log's first argument): a text or a structured object. */
  readonly message: unknown
  /** Everything logged, as Effect's logger received it. */
  readonly parts: unknown
  /** The JSON line the processes print for it (@intake/node's jsonLineLogger). */
  readonly json: string
}

/** A captured JSON line, parsed, as the assertions read it. */
export interface LogLine {
  readonly level: string
  readonly message: string
  readonly cause?: string
  // biome-ignore lint/suspicious/noExplicitAny: log lines are checked by assertions
  readonly [field: string]: any
}

export interface CapturedLogs {
  /** Provide it (or Layer.provide it to a server's layer) to capture instead of printing. */
  readonly layer: Layer.Layer<never>
  /** Every line since the capture began, oldest first (grows as the code logs). */
  readonly lines: ReadonlyArray<CapturedLine>
  /** "LEVEL message" of the lines whose message, as text, starts with `prefix` (all by default). */
  readonly texts: (prefix?: string) => Array<string>
  /** The JSON lines parsed, from the `from`-th line on (all by default). */
  readonly parsed: (from?: number) => Array<LogLine>
  /** The parsed JSON lines whose message matches `pattern`. */
  readonly matching: (pattern: RegExp) => Array<LogLine>
  /** Everything printed, one JSON line each: to assert a secret appears nowhere. */
  readonly printed: () => string
}

const first = (message: unknown) => (Array.isArray(message) ? message[0] : message)

/** A fresh capture: nothing is shared between two calls. */
export const captureLogs = (): CapturedLogs => {
  const lines: Array<CapturedLine> = []
  const capture = Logger.make<unknown, void>((options) => {
    lines.push({
      level: options.logLevel.label,
      message: first(options.message),
      parts: options.message,
      json: jsonLineLogger.log(options)
    })
  })
  const parsed = (from = 0) => lines.slice(from).map((line) => JSON.parse(line.json) as LogLine)
  return {
    layer: Logger.replace(Logger.defaultLogger, capture),
    lines,
    texts: (prefix = "") =>
      lines
        .filter((line) => String(line.message).startsWith(prefix))
        .map((line) => `${line.level} ${String(line.message)}`),
    parsed,
    matching: (pattern) => parsed().filter((line) => pattern.test(String(line.message))),
    printed: () => lines.map((line) => line.json).join("\n")
  }
}
