//! `string_enum!`: the closed string sets of the API (job states, error codes, ...) as Rust
//! enums that still accept a value this client does not know, kept in a fallback variant,
//! because the server may add values. The generated layer declares every such enum with it.
//!
//! Owns: the wire form of these enums (a JSON string), `as_str`, `From<&str>`, `Display`
//! and the query-string form. Must not: hold any value list (the generator writes them).

/// Declares `pub enum $name { $variant..., $other(String) }` with its wire strings.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident($other:ident) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[allow(clippy::enum_variant_names)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this client does not know (the server may add values), as sent.
            $other(String),
        }

        impl $name {
            /// Every value this client knows, in the document's order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),*];

            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $value, )*
                    $name::$other(value) => value,
                }
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $value => $name::$variant, )*
                    other => $name::$other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Ok($name::from(value.as_ref()))
            }
        }

        impl crate::transport::QueryValue for $name {
            fn push_pairs(&self, name: &'static str, pairs: &mut Vec<(&'static str, String)>) {
                pairs.push((name, self.as_str().to_owned()));
            }
        }
    };
}
