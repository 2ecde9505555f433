//! Task contract versions ([`Contract`]): which WIT package of `wit/` a component
//! targets, found from its imports, and which imports each version provides.
//!
//! A component's contract is the lowest version that provides everything it imports, so
//! a component that imports nothing newer than 0.1 runs on a 0.1-only host. Must not look
//! at anything but import names (types are checked by the linker).

use std::fmt;
use std::str::FromStr;

/// A version of the `sluice:task` contract, oldest first (the order is the `Ord`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Contract {
    /// `sluice:task@0.1.0` (`wit/task.wit`): `host.log`, `host.cancelled`, denied WASI.
    V0_1,
    /// `sluice:task@0.2.0` (`wit/v0.2/`): 0.1 plus `wasi:http/outgoing-handler` and
    /// `sluice:task/secrets`.
    V0_2,
    /// `sluice:task@0.3.0` (`wit/v0.3/`): 0.2 plus `sluice:task/durable` and
    /// `sluice:task/flow`, and `jobs.enqueue` returning the follow-up's id.
    V0_3,
}

impl Contract {
    /// Every version, oldest first.
    pub const ALL: [Contract; 3] = [Contract::V0_1, Contract::V0_2, Contract::V0_3];
    /// The newest version this build of the host implements.
    pub const NEWEST: Contract = Contract::V0_3;

    /// `"0.1"`, `"0.2"`: how the version is stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Contract::V0_1 => "0.1",
            Contract::V0_2 => "0.2",
            Contract::V0_3 => "0.3",
        }
    }

    /// N of `sluice:task@0.N.0`: how the store records a component's contract and how a
    /// host tells the claim which contracts it runs.
    pub fn minor(self) -> u8 {
        match self {
            Contract::V0_1 => 1,
            Contract::V0_2 => 2,
            Contract::V0_3 => 3,
        }
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A contract version that is not one of [`Contract::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown task contract `{0}` (this host knows 0.1, 0.2 and 0.3)")]
pub struct UnknownContract(pub String);

impl FromStr for Contract {
    type Err = UnknownContract;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "0.1" | "0.1.0" => Ok(Contract::V0_1),
            "0.2" | "0.2.0" => Ok(Contract::V0_2),
            "0.3" | "0.3.0" => Ok(Contract::V0_3),
            other => Err(UnknownContract(other.to_string())),
        }
    }
}

/// WASI 0.2 interfaces every contract provides (wasmtime-wasi's `wasi:cli/imports` minus
/// unstable ones). All but clocks and random are denied-by-default stubs.
const WASI_INTERFACES: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/ip-name-lookup",
];

/// `wasi:http` interfaces 0.2 provides (outgoing requests only; no incoming handler).
const HTTP_INTERFACES: &[&str] = &["wasi:http/types", "wasi:http/outgoing-handler"];

/// `sluice:task` interfaces new in 0.2 (this host implements them all).
const TASK_V0_2_INTERFACES: &[&str] = &["sluice:task/secrets", "sluice:task/jobs"];

/// `sluice:task` interfaces of 0.3 (all five are versioned `@0.3.*`).
const TASK_V0_3_INTERFACES: &[&str] = &[
    "sluice:task/host",
    "sluice:task/secrets",
    "sluice:task/jobs",
    "sluice:task/durable",
    "sluice:task/flow",
];

/// The contract that provides `import` (`name@version`), or `None` if no contract this
/// host implements does. `wasi:io/poll@0.2.3` → 0.1; `sluice:task/host@0.2.0` → 0.2;
/// `wasi:http/types@0.2.12` → 0.2; `sluice:task/durable@0.3.0` → 0.3;
/// `wasi:http/incoming-handler@0.2.0` → none.
pub fn providing(import: &str) -> Option<Contract> {
    let (path, version) = import.split_once('@').unwrap_or((import, ""));
    match path {
        "sluice:task/host" if version.starts_with("0.1.") => Some(Contract::V0_1),
        "sluice:task/host" if version.starts_with("0.2.") => Some(Contract::V0_2),
        _ if TASK_V0_2_INTERFACES.contains(&path) && version.starts_with("0.2.") => {
            Some(Contract::V0_2)
        }
        _ if TASK_V0_3_INTERFACES.contains(&path) && version.starts_with("0.3.") => {
            Some(Contract::V0_3)
        }
        _ if !version.starts_with("0.2.") => None,
        _ if WASI_INTERFACES.contains(&path) => Some(Contract::V0_1),
        _ if HTTP_INTERFACES.contains(&path) => Some(Contract::V0_2),
        _ => None,
    }
}

/// The lowest contract that provides every import, or the first import none provides.
pub fn required(imports: &[String]) -> Result<Contract, &str> {
    let mut needed = Contract::V0_1;
    for import in imports {
        needed = needed.max(providing(import).ok_or(import.as_str())?);
    }
    Ok(needed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_import_is_provided_by_its_lowest_contract() {
        assert_eq!(providing("wasi:io/poll@0.2.0"), Some(Contract::V0_1));
        assert_eq!(
            providing("wasi:cli/environment@0.2.6"),
            Some(Contract::V0_1)
        );
        assert_eq!(providing("sluice:task/host@0.1.0"), Some(Contract::V0_1));
        assert_eq!(providing("sluice:task/host@0.2.0"), Some(Contract::V0_2));
        assert_eq!(providing("sluice:task/jobs@0.2.0"), Some(Contract::V0_2));
        assert_eq!(providing("sluice:task/jobs@0.1.0"), None);
        assert_eq!(providing("wasi:http/types@0.2.0"), Some(Contract::V0_2));
        assert_eq!(
            providing("wasi:http/outgoing-handler@0.2.12"),
            Some(Contract::V0_2)
        );
        assert_eq!(providing("sluice:task/secrets@0.2.0"), Some(Contract::V0_2));
        // Not (yet) provided by any contract this host implements.
        assert_eq!(providing("wasi:http/incoming-handler@0.2.0"), None);
        assert_eq!(providing("sluice:task/secrets@0.1.0"), None);
        assert_eq!(providing("sluice:task/host@0.3.0"), Some(Contract::V0_3));
        assert_eq!(providing("sluice:task/durable@0.3.0"), Some(Contract::V0_3));
        assert_eq!(providing("sluice:task/flow@0.3.0"), Some(Contract::V0_3));
        assert_eq!(providing("sluice:task/durable@0.2.0"), None);
        assert_eq!(providing("sluice:task/host@0.4.0"), None);
        assert_eq!(providing("wasi:io/poll@0.3.0"), None);
        assert_eq!(providing("wasi:io/poll"), None);
        assert_eq!(providing("wasi:keyvalue/store@0.2.0"), None);
    }

    #[test]
    fn a_component_needs_the_newest_contract_among_its_imports() {
        assert_eq!(required(&[]), Ok(Contract::V0_1));
        let old = names(&["wasi:io/poll@0.2.0", "sluice:task/host@0.1.0"]);
        assert_eq!(required(&old), Ok(Contract::V0_1));
        let http = names(&["wasi:io/poll@0.2.0", "wasi:http/outgoing-handler@0.2.12"]);
        assert_eq!(required(&http), Ok(Contract::V0_2));
        let both = names(&["sluice:task/host@0.1.0", "sluice:task/host@0.2.0"]);
        assert_eq!(required(&both), Ok(Contract::V0_2));
        let bad = names(&["wasi:io/poll@0.2.0", "wasi:nn/graph@0.2.0"]);
        assert_eq!(required(&bad), Err("wasi:nn/graph@0.2.0"));
    }

    #[test]
    fn versions_parse_print_and_order() {
        for c in Contract::ALL {
            assert_eq!(c.as_str().parse::<Contract>(), Ok(c));
        }
        assert_eq!("0.2.0".parse::<Contract>(), Ok(Contract::V0_2));
        assert!("0.4".parse::<Contract>().is_err());
        assert!(Contract::V0_1 < Contract::V0_2 && Contract::V0_2 < Contract::V0_3);
        assert_eq!(Contract::NEWEST, *Contract::ALL.last().unwrap());
    }
}
