//! The sampler library's errors: the user's (a bad flag or config file, named precisely, reported at start)
//! apart from the ones met while running (a source that does not answer, a spool that cannot be written).

use std::path::PathBuf;

/// Everything that can go wrong in the sampler library.
#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    /// A bad flag, environment variable or configuration value: the user can fix it. Reported at start.
    #[error("{0}")]
    Config(String),
    /// The attribution config file cannot be read or is invalid.
    #[error("config file {path}: {message}")]
    ConfigFile { path: PathBuf, message: String },
    /// The source (exporter, Prometheus, NVML) could not be read this time. Retried at the next tick.
    #[error("{source_name}: {message}")]
    Source {
        source_name: &'static str,
        message: String,
    },
    /// The source cannot be used at all (e.g. the NVML library is missing). Reported at start.
    #[error("{0}")]
    Unavailable(String),
    /// The spool could not be read or written.
    #[error("spool {path}: {message}")]
    Spool { path: PathBuf, message: String },
    /// The spool holds `--spool-max-bytes` undelivered and keeps its oldest (`--spool-full keep-oldest`): the
    /// window was not spooled.
    #[error("spool {path} is full (--spool-max-bytes {max_bytes} undelivered): the window is not spooled")]
    SpoolFull { path: PathBuf, max_bytes: u64 },
    /// The metrics listener could not be bound.
    #[error("metrics listener {addr}: {message}")]
    Metrics { addr: String, message: String },
}

impl SamplerError {
    pub fn config(message: impl Into<String>) -> Self {
        SamplerError::Config(message.into())
    }

    pub fn source(source_name: &'static str, message: impl Into<String>) -> Self {
        SamplerError::Source {
            source_name,
            message: message.into(),
        }
    }

    pub fn spool(path: impl Into<PathBuf>, e: impl std::fmt::Display) -> Self {
        SamplerError::Spool {
            path: path.into(),
            message: e.to_string(),
        }
    }
}

pub type Result<T> = std::result::Result<T, SamplerError>;
