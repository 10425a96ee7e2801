//! Process settings the C library holds: the allocator's for the long-running commands (`serve`, `demo`,
//! `sampler`), so that resident memory follows what is in use over weeks (RELIABILITY.md, "The soak"); and, for
//! the commands that print a report, the default SIGPIPE, so that `eai-gpu usage … | head` stops quietly.
//!
//! glibc's malloc, left to itself, grew `serve` by 10 % an hour in the soak with nothing more kept alive: the
//! week's allocation reads a few hundred thousand rows into multi-megabyte buffers that are freed a second later,
//! glibc raises its mmap threshold after each such free (so the next ones land in an arena's heap), and one arena
//! per thread that ever allocated (eight per core, up to 15 here) each keeps its freed pages. So, unless the
//! operator set glibc's own variable (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`, which then win):
//! - arenas: one per core;
//! - a fixed mmap threshold of 1 MiB: a larger buffer is mapped for itself and unmapped when freed;
//! - every `EAI_MALLOC_TRIM_SECONDS` (60), `malloc_trim(0)` hands the free pages inside the arenas back.
//!
//! Elsewhere than Linux with glibc, the allocator is left alone. These calls into the C library are this crate's
//! only unsafe code.
#![allow(unsafe_code)]

/// Sets the arenas and the mmap threshold. Call before any thread starts (before the runtime).
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let set = |name: &str, param: libc::c_int, value: usize| {
            if std::env::var_os(name).is_none() {
                let value = libc::c_int::try_from(value).unwrap_or(libc::c_int::MAX);
                // SAFETY: mallopt takes any parameter and value; it answers 0 for one it refuses.
                unsafe { libc::mallopt(param, value) };
            }
        };
        set("MALLOC_ARENA_MAX", libc::M_ARENA_MAX, cores);
        set("MALLOC_MMAP_THRESHOLD_", libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Hands the allocator's free pages back to the system every `seconds` (0: never), on the current runtime.
pub fn spawn_trim(seconds: u32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if seconds > 0 {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(seconds.into()));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            every.tick().await;
            loop {
                every.tick().await;
                // SAFETY: malloc_trim only returns free memory to the system; it takes the arenas' locks itself.
                let released = unsafe { libc::malloc_trim(0) };
                tracing::debug!(released = released == 1, "malloc_trim");
            }
        });
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = seconds;
}

/// A closed pipe ends the process silently, as for any Unix filter, instead of a panic on the next print. Only for
/// the commands that print a report and exit: a server keeps SIGPIPE ignored (a closed socket is an error to
/// handle, never a reason to die).
pub fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
