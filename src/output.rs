//! Writing to standard output the way command-line users expect: a reader that went
//! away (`| head`) ends the output quietly, JSON reports pretty-printed.

use std::io::Write;

/// Writes `text` to standard output; a closed pipe exits 0 quietly, any other error
/// exits 1 with one line.
pub fn out(text: &str) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("svar2: error: standard output: {e}");
        std::process::exit(1);
    }
}

/// A report as pretty JSON on standard output, for scripts.
pub fn out_json(report: &impl serde::Serialize) {
    out(&format!(
        "{}\n",
        serde_json::to_string_pretty(report).expect("reports serialise")
    ));
}

/// The summary line's note on shards re-encoded after later records widened them.
pub fn regrown(shards: u64) -> String {
    if shards > 0 {
        format!(", {shards} shards re-encoded after layouts grew")
    } else {
        String::new()
    }
}

/// The command line parsed; `--help`, `--version` and usage errors printed as clap
/// prints them, except that help or a version that cannot be written (`> /dev/full`)
/// is an error (clap's own exit ignores it).
pub fn parse_or_exit<P: clap::Parser>() -> P {
    match P::try_parse() {
        Ok(p) => p,
        Err(e) if !e.use_stderr() => {
            let text = e.render().to_string();
            out(&text);
            std::process::exit(0);
        }
        Err(e) => e.exit(),
    }
}
