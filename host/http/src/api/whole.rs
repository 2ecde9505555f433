//! Integer fields of JSON request bodies read the way JSON Schema (and so the OpenAPI
//! document) counts integers: `3` and `3.0` are the same integer, so both are accepted;
//! `3.5`, or a number outside the field's Rust type, is refused naming the range. serde
//! alone refuses `3.0` for an integer type, which no document can say.
//!
//! Owns: [`option`] (for `#[serde(default, deserialize_with = "whole::option")]`) and
//! [`of_number`]. Must not: accept anything that is not a whole number.

use serde::de::{Deserialize, Deserializer, Error as _};

/// `number` as a `T`, when it is a whole number within `T`'s range.
pub fn of_number<T: TryFrom<i128>>(number: &serde_json::Number) -> Option<T> {
    let wide = if let Some(n) = number.as_i64() {
        i128::from(n)
    } else if let Some(n) = number.as_u64() {
        i128::from(n)
    } else {
        let f = number.as_f64()?;
        if !f.is_finite() || f.fract() != 0.0 {
            return None;
        }
        // Saturates far outside any field's range, which `try_from` then refuses.
        f as i128
    };
    T::try_from(wide).ok()
}

/// An optional integer field (absent or null: `None`).
pub fn option<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i128>,
{
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    of_number(&number).map(Some).ok_or_else(|| {
        D::Error::custom(format!(
            "invalid value: {number}, expected a whole number that fits {}",
            std::any::type_name::<T>()
        ))
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Fields {
        #[serde(default, deserialize_with = "super::option")]
        small: Option<i32>,
        #[serde(default, deserialize_with = "super::option")]
        big: Option<u64>,
    }

    fn parse(json: &str) -> Result<Fields, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn whole_numbers_are_accepted_as_json_schema_counts_them() {
        let f = parse(r#"{"small": 3.0, "big": 18446744073709551615}"#).unwrap();
        assert_eq!((f.small, f.big), (Some(3), Some(u64::MAX)));
        let f = parse(r#"{"small": null}"#).unwrap();
        assert_eq!((f.small, f.big), (None, None));
        assert_eq!(
            parse(r#"{"small": -2147483648}"#).unwrap().small,
            Some(i32::MIN)
        );
        for bad in [
            r#"{"small": 3.5}"#,
            r#"{"small": 2147483648}"#,
            r#"{"big": -1}"#,
            r#"{"big": 1e300}"#,
            r#"{"small": "3"}"#,
        ] {
            let error = parse(bad).unwrap_err();
            assert!(!error.is_empty(), "{bad}");
        }
        assert!(parse(r#"{"small": 3.5}"#).unwrap_err().contains("fits i32"));
    }
}
