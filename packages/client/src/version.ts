/** This package's version (package.json's; a test keeps the two equal). */
export const VERSION = "1.0.0"
