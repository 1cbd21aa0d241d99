//! Ctrl-C, `kill` or a closed terminal during a command that writes a store: one line
//! on standard error saying what the run left and what to do, then the signal's own
//! death, so shells, `timeout` and Slurm see the status they expect (130 for Ctrl-C).
//! Nothing is cleaned up here: what a stopped run leaves is what `kill -9` leaves
//! (an output without its root `zarr.json`, which the same command replaces), and the
//! line only says so; without it the progress bar stopped and nothing explained why.

use std::ffi::c_int;
use std::io::IsTerminal;
use std::sync::OnceLock;

/// The line the handler writes, made before it is installed: a handler may only call
/// async-signal-safe functions, so it formats and allocates nothing.
static LINE: OnceLock<Vec<u8>> = OnceLock::new();

const SIGNALS: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// From now on, a stopping signal prints `svar2: interrupted: {left}` before the
/// process dies of it. A signal the process was started ignoring (`nohup`, a
/// background job of a script) stays ignored. The first call wins.
pub fn say_on_interrupt(left: String) {
    let mut line = Vec::new();
    if std::io::stderr().is_terminal() {
        line.push(b'\n'); // below the progress bar's line
    }
    line.extend_from_slice(format!("svar2: interrupted: {left}\n").as_bytes());
    if LINE.set(line).is_err() {
        return;
    }
    for sig in SIGNALS {
        // SAFETY: sigaction with a zeroed struct reads the current disposition only;
        // the handler installed is async-signal-safe (see `handler`), and SA_RESETHAND
        // restores the default before it runs, so a second signal kills at once.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = handler as extern "C" fn(c_int) as libc::sighandler_t;
            new.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(sig, &new, std::ptr::null_mut());
        }
    }
}

/// Writes the line, then raises the signal again: its disposition is the default by
/// now (SA_RESETHAND), and it is blocked until the handler returns, when it kills.
extern "C" fn handler(sig: c_int) {
    if let Some(line) = LINE.get() {
        // SAFETY: write(2) and raise(3) are async-signal-safe; the line is a static
        // buffer never changed after it was set.
        unsafe {
            libc::write(2, line.as_ptr().cast(), line.len());
        }
    }
    // SAFETY: as above.
    unsafe {
        libc::raise(sig);
    }
}

/// What a stopped `convert` or `rechunk` leaves at `output`, and where its staged copy
/// waits for the next run to clear it. With `--force` the run may have stopped before
/// it cleared the old store, which is then as it was.
pub fn store_left(output: &std::path::Path, force: bool) -> String {
    use svar2_store::dir::{staging_dir, zip_staging_dir};
    let out = output.display();
    if svar2_storage::is_zip_path(output) {
        return format!(
            "{out} was not written (a file already there is as it was); run the same command \
             again, which clears {} and {}",
            zip_staging_dir(output).display(),
            svar2_storage::zip::partial_path(output).display()
        );
    }
    let what = match force {
        true => format!(
            "{out} is the old store as it was, or, if it was cleared already, an unfinished \
             one (no root zarr.json, so readers refuse it); run the same command again"
        ),
        false => format!(
            "{out} is not finished (no root zarr.json, so readers refuse it); the same \
             command run again replaces what this run left, without --force"
        ),
    };
    match svar2_storage::bucket::is_bucket_url(output) {
        true => format!(
            "{what} (and clears the local copy {})",
            staging_dir(output).display()
        ),
        false => what,
    }
}
