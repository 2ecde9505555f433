//! Human units on the command line: durations (`30s`, `5m`, `250ms`) and byte sizes
//! (`64MiB`, `1MB`, `512KiB`, `1024`). Parsing only; nothing here touches the database
//! or the sandbox.

use std::time::Duration;

/// Parse a duration such as `30s`, `5m`, `1h 30m`, `250ms`; a bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(text)
        .map_err(|e| format!("`{text}` is not a duration ({e}); try `30s`, `5m` or `250ms`"))
}

/// Parse a byte size such as `64MiB`, `1MB`, `512KiB`, `10kb` or a bare number of bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size; try `64MiB`, `1MB` or `4096`"))?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        other => {
            return Err(format!(
                "`{other}` is not a size unit; use B, KB, KiB, MB, MiB, GB or GiB"
            ));
        }
    };
    let bytes = number * factor as f64;
    if !(0.0..=u64::MAX as f64).contains(&bytes) || bytes.fract() != 0.0 {
        return Err(format!("`{text}` is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// Render a byte count the way operators read it: `128 MiB`, `1.5 KiB`, `17 B`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("12").unwrap(), Duration::from_secs(12));
        assert!(parse_duration("soon").unwrap_err().contains("soon"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert!(parse_size("12 parsecs").unwrap_err().contains("parsecs"));
        assert_eq!(format_size(128 << 20), "128 MiB");
        assert_eq!(format_size(1536), "1.5 KiB");
    }
}
