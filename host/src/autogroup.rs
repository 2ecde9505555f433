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
    #[error(
        "--autogroup-nice: cannot {what} {path}: {source}; without it, give the worker a \
         lower CPU weight through its service manager (systemd: CPUWeight=)"
    )]
    Proc {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
}

/// Sets this process's autogroup to `nice` (1–19: higher yields more of the CPU to other
/// sessions' processes); returns what the kernel reports afterwards, e.g.
/// `/autogroup-812 nice 10`.
pub fn set_nice(nice: u8) -> Result<String, AutogroupError> {
    set_nice_in(Path::new("/proc"), std::process::id(), nice)
}

/// [`set_nice`] for process `pid` whose `/proc` is at `proc` (a folder of files in tests).
fn set_nice_in(proc: &Path, pid: u32, nice: u8) -> Result<String, AutogroupError> {
    let enabled = std::fs::read_to_string(proc.join("sys/kernel/sched_autogroup_enabled"))
        .map_err(|e| AutogroupError::Unavailable(format!("kernel.sched_autogroup_enabled: {e}")))?;
    if enabled.trim() != "1" {
        return Err(AutogroupError::Unavailable(
            "kernel.sched_autogroup_enabled is 0".into(),
        ));
    }
    let io = |what, path: &Path| {
        let path = path.display().to_string();
        move |source| AutogroupError::Proc { what, path, source }
    };
    let stat_path = proc.join("self/stat");
    let stat = std::fs::read_to_string(&stat_path).map_err(io("read", &stat_path))?;
    let session = session_of(&stat).ok_or_else(|| AutogroupError::Proc {
        what: "find the session in",
        path: stat_path.display().to_string(),
        source: std::io::Error::other("unexpected format"),
    })?;
    if session != pid {
        return Err(AutogroupError::SharedSession { session, pid });
    }
    let autogroup = proc.join("self/autogroup");
    std::fs::write(&autogroup, nice.to_string()).map_err(io("write", &autogroup))?;
    let now = std::fs::read_to_string(&autogroup).map_err(io("read", &autogroup))?;
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
            AutogroupError::Proc { .. } => panic!("nothing may be written: {text}"),
        }
    }

    /// A fake `/proc` for process 812: autogroups `enabled`, a stat line of session
    /// `session`, and `self/autogroup` a file (or a folder, which cannot be written).
    fn fake_proc(name: &str, enabled: &str, session: u32, writable: bool) -> std::path::PathBuf {
        let root =
            std::env::temp_dir().join(format!("sluice-autogroup-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(root.join("self")).unwrap();
        std::fs::write(root.join("sys/kernel/sched_autogroup_enabled"), enabled).unwrap();
        let stat = format!("812 (sluice) S 1 812 {session} 0 -1");
        std::fs::write(root.join("self/stat"), stat).unwrap();
        if writable {
            std::fs::write(root.join("self/autogroup"), "/autogroup-5 nice 0").unwrap();
        } else {
            std::fs::create_dir(root.join("self/autogroup")).unwrap();
        }
        root
    }

    #[test]
    fn every_refusal_names_what_to_do_and_a_session_leader_is_lowered() {
        let off = fake_proc("off", "0\n", 812, true);
        let error = set_nice_in(&off, 812, 10).unwrap_err().to_string();
        assert!(
            error.contains("is 0") && error.contains("CPUWeight="),
            "{error}"
        );

        let gone = fake_proc("gone", "1\n", 812, true);
        std::fs::remove_file(gone.join("sys/kernel/sched_autogroup_enabled")).unwrap();
        let error = set_nice_in(&gone, 812, 10).unwrap_err().to_string();
        assert!(
            error.contains("sched_autogroup_enabled") && error.contains("CPUWeight="),
            "{error}"
        );

        let shared = fake_proc("shared", "1\n", 700, true);
        let error = set_nice_in(&shared, 812, 10).unwrap_err().to_string();
        assert!(
            error.contains("session 700") && error.contains("setsid sluice"),
            "{error}"
        );
        let untouched = std::fs::read_to_string(shared.join("self/autogroup")).unwrap();
        assert_eq!(untouched, "/autogroup-5 nice 0", "refused before writing");

        let unwritable = fake_proc("unwritable", "1\n", 812, false);
        let error = set_nice_in(&unwritable, 812, 10).unwrap_err().to_string();
        assert!(
            error.contains("cannot write") && error.contains("self/autogroup"),
            "{error}"
        );

        let leader = fake_proc("leader", "1\n", 812, true);
        assert_eq!(set_nice_in(&leader, 812, 10).unwrap(), "10");

        for root in [off, gone, shared, unwritable, leader] {
            let _ = std::fs::remove_dir_all(root);
        }
    }
}
