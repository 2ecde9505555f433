//! `--autogroup-nice`: lowers this process's CPU weight against the rest of the machine
//! through Linux's autogroups (sched(7)), so that a PostgreSQL on the same machine — the
//! database the worker waits for at every claim and completion — gets a CPU at once
//! when busy guests would otherwise keep it waiting (issue #22, docs/fleet.md).
//!
//! Owns reading `/proc/self/stat` and writing `/proc/self/autogroup`. Refuses when the
//! autogroup is shared with the session that started sluice (a shell's, whose other
//! programs would be lowered too) or when the kernel has no autogroups. Must not touch
//! the priority of single threads (the sandbox's guest threads keep the process's).

use std::path::Path;

/// Why the autogroup's nice value was not set.
#[derive(Debug, thiserror::Error)]
pub enum AutogroupError {
    #[error(
        "--autogroup-nice: this kernel schedules no autogroups ({0}); give the worker a \
         lower CPU weight through its service manager instead (systemd: CPUWeight=, \
         Docker: --cpu-shares)"
    )]
    Unavailable(String),
    #[error(
        "--autogroup-nice: sluice shares its autogroup with the session that started it \
         (session {session}, sluice is process {pid}), whose other programs would be \
         lowered too; start it in its own session: setsid sluice ..."
    )]
    SharedSession { session: u32, pid: u32 },
    #[error("--autogroup-nice: cannot set it: {0}")]
    Write(std::io::Error),
}

/// Sets this process's autogroup to `nice` (0–19: higher yields more of the CPU to other
/// sessions' processes); returns what the kernel reports afterwards, e.g.
/// `/autogroup-812 nice 10`.
pub fn set_nice(nice: u8) -> Result<String, AutogroupError> {
    let proc = Path::new("/proc");
    let enabled = std::fs::read_to_string(proc.join("sys/kernel/sched_autogroup_enabled"))
        .map_err(|e| AutogroupError::Unavailable(format!("kernel.sched_autogroup_enabled: {e}")))?;
    if enabled.trim() != "1" {
        return Err(AutogroupError::Unavailable(
            "kernel.sched_autogroup_enabled is 0".into(),
        ));
    }
    let stat = std::fs::read_to_string(proc.join("self/stat")).map_err(AutogroupError::Write)?;
    let pid = std::process::id();
    let session = session_of(&stat).unwrap_or(0);
    if session != pid {
        return Err(AutogroupError::SharedSession { session, pid });
    }
    let autogroup = proc.join("self/autogroup");
    std::fs::write(&autogroup, nice.to_string()).map_err(AutogroupError::Write)?;
    let now = std::fs::read_to_string(&autogroup).map_err(AutogroupError::Write)?;
    Ok(now.trim().to_owned())
}

/// The session id in a `/proc/PID/stat` line: the fourth field after the command name,
/// which is in parentheses and may itself hold spaces and parentheses.
fn session_of(stat: &str) -> Option<u32> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_read_after_the_last_parenthesis_of_the_command_name() {
        assert_eq!(session_of("812 (sluice) S 1 812 812 0 -1"), Some(812));
        assert_eq!(
            session_of("9 (a) b (c)) R 1 7 42 34816 9"),
            Some(42),
            "a command name with spaces and parentheses"
        );
        assert_eq!(session_of("garbage"), None);
        assert_eq!(session_of("1 (x) S 1"), None);
    }

    #[test]
    fn a_process_sharing_its_session_is_refused_and_told_to_use_setsid() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        if session_of(&stat) == Some(std::process::id()) {
            return; // started in a session of its own: setting it would be allowed
        }
        let Err(error) = set_nice(10) else {
            panic!("a test process must not lower its launching session's autogroup");
        };
        let text = error.to_string();
        match error {
            AutogroupError::SharedSession { .. } => assert!(text.contains("setsid"), "{text}"),
            AutogroupError::Unavailable(_) => assert!(text.contains("CPUWeight"), "{text}"),
            AutogroupError::Write(_) => panic!("nothing may be written: {text}"),
        }
    }
}
