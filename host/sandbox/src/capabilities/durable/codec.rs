//! How the waits' results are journaled: a signal as `0` (none: the timeout) or `1` and
//! its payload; awaited jobs as, for each in order, a state byte (`0` completed, `1` dead,
//! `2` cancelled), then its output and its error, each `0` (none) or `1`, a 4-byte
//! big-endian length and the bytes. Must not depend on anything but the bytes.

use crate::host_imports::v0_3::sluice::task::durable::{ChildOutcome, ChildState as WitState};
use crate::journal::codec::short_hash;
use crate::journal::{ChildOutcome as Finished, ChildState};

pub(super) fn encode_signal(payload: Option<&[u8]>) -> (Vec<u8>, String) {
    match payload {
        None => (vec![0], "timed out".to_owned()),
        Some(p) => {
            let mut out = vec![1];
            out.extend_from_slice(p);
            (out, format!("signal, {} bytes", p.len()))
        }
    }
}

pub(super) fn decode_signal(bytes: &[u8]) -> Option<Vec<u8>> {
    match bytes.split_first() {
        Some((1, payload)) => Some(payload.to_vec()),
        _ => None,
    }
}

/// The fingerprint of an `await-jobs` call: its ids, shortened past a few.
pub(super) fn ids_fingerprint(ids: &[u64]) -> String {
    let text: Vec<String> = ids.iter().map(u64::to_string).collect();
    let text = text.join(",");
    if ids.len() <= 8 {
        text
    } else {
        format!("{} ids #{}", ids.len(), short_hash(text.as_bytes()))
    }
}

fn put_option(out: &mut Vec<u8>, part: Option<&[u8]>) {
    match part {
        None => out.push(0),
        Some(bytes) => {
            out.push(1);
            out.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_be_bytes());
            out.extend_from_slice(bytes);
        }
    }
}

pub(super) fn encode_children(finished: &[Finished]) -> (Vec<u8>, String) {
    let mut out = Vec::new();
    let mut completed = 0;
    for child in finished {
        out.push(match child.state {
            ChildState::Completed => 0,
            ChildState::Dead => 1,
            ChildState::Cancelled => 2,
        });
        completed += usize::from(child.state == ChildState::Completed);
        put_option(&mut out, child.output.as_deref());
        put_option(&mut out, child.error.as_ref().map(String::as_bytes));
    }
    let summary = format!("{} finished, {completed} completed", finished.len());
    (out, summary)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn option(&mut self) -> Option<Option<Vec<u8>>> {
        match self.byte()? {
            0 => Some(None),
            _ => {
                let len = self.0.get(..4)?;
                let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
                let bytes = self.0.get(4..4 + len)?.to_vec();
                self.0 = &self.0[4 + len..];
                Some(Some(bytes))
            }
        }
    }
}

pub(super) fn decode_children(ids: &[u64], bytes: &[u8]) -> Option<Vec<ChildOutcome>> {
    let mut reader = Reader(bytes);
    let mut finished = Vec::with_capacity(ids.len());
    for _ in ids {
        let state = match reader.byte()? {
            0 => ChildState::Completed,
            1 => ChildState::Dead,
            _ => ChildState::Cancelled,
        };
        let output = reader.option()?;
        let error = reader
            .option()?
            .map(|e| String::from_utf8_lossy(&e).into_owned());
        finished.push(Finished {
            state,
            output,
            error,
        });
    }
    Some(outcomes(ids, finished))
}

/// The guest's records of `finished`, the outcomes of `ids` in order.
pub(super) fn outcomes(ids: &[u64], finished: Vec<Finished>) -> Vec<ChildOutcome> {
    ids.iter()
        .zip(finished)
        .map(|(&id, child)| ChildOutcome {
            id,
            state: match child.state {
                ChildState::Completed => WitState::Completed,
                ChildState::Dead => WitState::Dead,
                ChildState::Cancelled => WitState::Cancelled,
            },
            output: child.output,
            error: child.error,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_and_children_come_back_as_themselves() {
        for payload in [None, Some(&b"{\"ok\":true}"[..]), Some(&b""[..])] {
            let (bytes, _) = encode_signal(payload);
            assert_eq!(decode_signal(&bytes).as_deref(), payload);
        }
        let finished = vec![
            Finished {
                state: ChildState::Completed,
                output: Some(b"42".to_vec()),
                error: None,
            },
            Finished {
                state: ChildState::Dead,
                output: None,
                error: Some("guest fatal: no".into()),
            },
            Finished {
                state: ChildState::Cancelled,
                output: None,
                error: None,
            },
        ];
        let (bytes, summary) = encode_children(&finished);
        assert_eq!(summary, "3 finished, 1 completed");
        let back = decode_children(&[7, 8, 9], &bytes).expect("readable");
        let again = outcomes(&[7, 8, 9], finished);
        assert_eq!(format!("{back:?}"), format!("{again:?}"));
        assert_eq!(back[1].id, 8);
        assert!(
            decode_children(&[7, 8, 9, 10], &bytes).is_none(),
            "one short"
        );
    }
}
