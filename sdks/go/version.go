package eai

// Version is the SDK's version (the module's tag is v<Version>); it is sent in the User-Agent header.
const Version = "0.1.0"
