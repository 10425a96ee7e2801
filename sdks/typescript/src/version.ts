/** The version of this SDK (`@enterprise-ai/sdk`), kept equal to package.json's by a test. */
export const VERSION = "0.1.0";
