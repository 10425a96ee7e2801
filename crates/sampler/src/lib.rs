//! eai-sampler: reads what the GPUs of a node did and pushes it to the control plane, never losing a window.
//!
//! The flow of one tick ([`Sampler::tick`]): a [`source::Source`] (DCGM exporter text, Prometheus HTTP API,
//! NVML) returns [`Readings`], per GPU or MIG instance; [`convert::Converter`] (pure: no I/O, no clock) turns
//! them into `eai_client::GpuSample`s, stamped with the window end aligned to the interval and attributed to a
//! deployment and tenant by [`attribution`]; the batch goes into the durable [`spool`] (fsync) before it is
//! considered safe; [`delivery`] sends what the spool holds, retrying only what is worth retrying, with
//! exponential backoff and jitter. [`metrics`] counts everything; [`cli`] is the `eai-gpu sampler` command.
//! Optionally, each tick also reads vLLM's token and timing counters ([`source::vllm`]) and spools their deltas
//! as usage events of `source: "vllm"` ([`vllm`]), delivered the same way.
//!
//! Code map: [`exposition`] (a tolerant Prometheus text parser), [`readings`] (what a source read: [`Readings`]
//! and the view of a series' labels), [`dcgm`] (DCGM series -> [`Readings`]),
//! [`mig`] (MIG profile -> share of a GPU), [`procmap`] (a PID -> its container and pod), [`hami`] (HAMi's
//! per-container figures -> measured shares), [`dra`] (DCGM exporter's DRA claim labels), [`attribution`] (the
//! config file's rules and pod-name defaults), [`convert`] (readings -> samples), [`source`] (the adapters),
//! [`spool`], [`delivery`], [`metrics`], [`sampler`] (the testable `tick()` and its thin loop), [`cli`], [`vllm`]
//! (vLLM counters -> deltas -> events).

pub mod attribution;
pub mod cli;
pub mod convert;
pub mod dcgm;
pub mod delivery;
pub mod dra;
pub mod error;
pub mod exposition;
pub mod hami;
pub mod import;
pub mod metrics;
pub mod mig;
mod names;
pub mod procmap;
pub mod readings;
pub mod sampler;
pub mod shares;
pub mod slurm;
pub mod source;
pub mod spool;
pub mod vllm;

pub use attribution::Attribution;
pub use convert::{Converter, Window};
pub use error::SamplerError;
pub use readings::{DeviceReading, MigInstance, Readings, Workload};
pub use sampler::{Sampler, SamplerOptions, TickReport};
pub use source::Source;
