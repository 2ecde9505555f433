//! Crate-private macros that write the same plain-Rust API over each contract's generated
//! bindings (`crate::bindings` for 0.2, `crate::v0_3::bindings` for 0.3), so the two stay
//! one piece of code: each WIT version has its own Rust types, but the same shape.

/// `From` conversions between a contract's world types (`job`, `task-error`) and the
/// SDK's [`crate::Job`] and [`crate::TaskError`]. Every contract has the same world types.
macro_rules! world_conversions {
    ($($bindings:ident)::+) => {
        impl From<crate::$($bindings)::+::Job> for crate::Job {
            fn from(j: crate::$($bindings)::+::Job) -> Self {
                crate::Job {
                    id: j.id,
                    job_type: j.job_type,
                    tenant: j.tenant,
                    attempt: j.attempt,
                    max_attempts: j.max_attempts,
                    payload: j.payload,
                }
            }
        }

        impl From<crate::TaskError> for crate::$($bindings)::+::TaskError {
            fn from(e: crate::TaskError) -> Self {
                match e {
                    crate::TaskError::Retry(m) => Self::Retry(m),
                    crate::TaskError::Fatal(m) => Self::Fatal(m),
                }
            }
        }
    };
}

/// The five level functions of a `log` module, writing through the `log` import of
/// `crate::$host`.
macro_rules! log_functions {
    ($($host:ident)::+) => {
        use crate::$($host)::+ as host;

        fn write(level: host::Level, message: impl AsRef<str>) {
            host::log(level, message.as_ref());
        }

        /// Log at `trace` level.
        pub fn trace(message: impl AsRef<str>) {
            write(host::Level::Trace, message);
        }

        /// Log at `debug` level.
        pub fn debug(message: impl AsRef<str>) {
            write(host::Level::Debug, message);
        }

        /// Log at `info` level.
        pub fn info(message: impl AsRef<str>) {
            write(host::Level::Info, message);
        }

        /// Log at `warn` level.
        pub fn warn(message: impl AsRef<str>) {
            write(host::Level::Warn, message);
        }

        /// Log at `error` level.
        pub fn error(message: impl AsRef<str>) {
            write(host::Level::Error, message);
        }
    };
}

/// A `secrets::get` reading through the `get` import of `crate::$wit`.
macro_rules! secrets_get {
    ($($wit:ident)::+) => {
        /// The value of secret `name` of the job's tenant.
        pub fn get(name: &str) -> Result<String, crate::secrets::SecretError> {
            use crate::$($wit)::+ as wit;
            use crate::secrets::SecretError;
            wit::get(name).map_err(|e| match e {
                wit::SecretError::NotGranted => SecretError::NotGranted(name.to_owned()),
                wit::SecretError::NotFound => SecretError::NotFound(name.to_owned()),
            })
        }
    };
}

/// Converts the `enqueue-error` of `crate::$wit` into [`crate::jobs::EnqueueError`].
macro_rules! enqueue_error_from {
    ($($wit:ident)::+) => {
        const _: () = {
            use crate::$($wit)::+ as wit;
            use crate::jobs::EnqueueError;

            impl From<wit::EnqueueError> for EnqueueError {
                fn from(error: wit::EnqueueError) -> Self {
                    match error {
                        wit::EnqueueError::UnknownJobType(name) => {
                            EnqueueError::UnknownJobType(name)
                        }
                        wit::EnqueueError::Invalid(message) => EnqueueError::Invalid(message),
                        wit::EnqueueError::LimitExceeded(message) => {
                            EnqueueError::LimitExceeded(message)
                        }
                    }
                }
            }
        };
    };
}

/// The export macro's body: `$run` becomes the `run` export of the world generated in
/// `$crate::$bindings`, whose generated export macro is `$export`.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_task {
    ([$($bindings:ident)::+] $export:ident, $run:path) => {
        const _: () = {
            struct SluiceTask;

            impl $crate::$($bindings)::+::Guest for SluiceTask {
                fn run(
                    job: $crate::$($bindings)::+::Job,
                ) -> ::core::result::Result<
                    ::std::vec::Vec<u8>,
                    $crate::$($bindings)::+::TaskError,
                > {
                    $crate::__run(job, $run)
                }
            }

            $crate::$($bindings)::+::$export!(SluiceTask with_types_in $crate::$($bindings)::+);
        };
    };
}
