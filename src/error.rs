//! One error type for the binding. Each variant says which JS error class it becomes
//! (thrown in `js::throw`), so a caller learns what went wrong and whose fault it was.

use std::fmt;

#[derive(Debug, Clone)]
pub enum Error {
    /// TensorFlow refused: `code` is TF's code name (`INVALID_ARGUMENT`), `message` TF's text.
    Tf { code: &'static str, message: String },
    /// A JS value of the wrong kind (an array where a number belongs): `TypeError`.
    Type(String),
    /// A value of the right kind out of its allowed range (a negative dim): `RangeError`.
    Range(String),
    /// A well-formed request the binding cannot serve (a deleted tensor id): `Error`.
    Invalid(String),
    /// N-API itself failed; the message is N-API's.
    Napi(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The `code` property of the thrown JS error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Tf { code, .. } => code,
            Error::Type(_) => "ERR_INVALID_ARG_TYPE",
            Error::Range(_) => "ERR_OUT_OF_RANGE",
            Error::Invalid(_) => "ERR_INVALID_ARG_VALUE",
            Error::Napi(_) => "ERR_NAPI",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Error::Tf { message, .. } => message,
            Error::Type(m) | Error::Range(m) | Error::Invalid(m) | Error::Napi(m) => m,
        }
    }

    /// Prefixes the message with where it happened (an op name, an argument path).
    pub fn context(self, what: &str) -> Error {
        match self {
            Error::Tf { code, message } => Error::Tf {
                code,
                message: format!("{what}: {message}"),
            },
            Error::Type(m) => Error::Type(format!("{what}: {m}")),
            Error::Range(m) => Error::Range(format!("{what}: {m}")),
            Error::Invalid(m) => Error::Invalid(format!("{what}: {m}")),
            Error::Napi(m) => Error::Napi(format!("{what}: {m}")),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message(), self.code())
    }
}

impl std::error::Error for Error {}
